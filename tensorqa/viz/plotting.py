"""The plotting library behind the ``viz`` extra: matplotlib with the Agg backend (no display),
figures turned into PNG bytes and data URIs for self-contained pages."""

from __future__ import annotations

import base64
import io

from tensorqa.errors import TensorQAError

EXTRA_HINT = "needs the plotting extra: pip install 'tensorqa[viz]'"


def pyplot(command: str):
    """``matplotlib.pyplot`` on the Agg backend, or a one-line TensorQAError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise TensorQAError(f"{command}: {EXTRA_HINT}") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig, dpi: int = 110) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    plt = pyplot("plot")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
