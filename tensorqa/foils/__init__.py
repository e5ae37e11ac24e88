"""VALSE-style caption/foil pairs proven by execution: generation, records, text-only baseline, metrics."""
