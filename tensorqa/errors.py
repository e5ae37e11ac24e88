"""The one exception type for user errors (bad input, impossible parameters).

The CLI prints ``tensorqa: error: <message>`` for it and exits with status 2, no traceback.
Messages name the input (file, field, word) and the problem in one line.
"""


class TensorQAError(Exception):
    """A user-facing error: bad input file, unknown vocabulary word, impossible parameter."""
