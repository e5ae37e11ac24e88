"""Looking at a benchmark: a video's timeline with a question's grounding (``tensorqa show``) and a
pool's distributions beside AGQA's (``tensorqa report``). Figure data (plain values: ``timeline``,
``summary``, ``question``) is apart from drawing (``draw_timeline``, ``draw_report``, ``html``: the
``viz`` extra, matplotlib Agg, images inlined), so the data is tested without matplotlib.
"""
