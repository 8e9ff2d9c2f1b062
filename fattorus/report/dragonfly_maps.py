"""Dragonfly link-traffic matrices, as the dragonfly paper draws them (its Figures 7, 8, 10).

:func:`matrices` folds a traffic vector ``(n_links,)`` (bytes per directed link) of a
:class:`~fattorus.topology.dragonfly.Dragonfly` into three matrices, summed over both
directions' tails and heads as given by ``topo.link_ends``:

* ``green`` ``(C, C)``: traffic between the columns of a row (one group, or every group);
* ``black`` ``(R, R)``: traffic between the rows of a column;
* ``blue`` ``(G, G)``: traffic between groups.

:func:`draw` writes them as heat maps (MB) into one PNG.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def matrices(topo: Any, traffic: np.ndarray, group: int | None = None) -> dict[str, np.ndarray]:
    """``{"green", "black", "blue"}`` traffic matrices in bytes (module docstring); ``group``
    restricts green and black to the links of one group (default: all groups summed)."""
    traffic = np.asarray(traffic, np.float64)
    ends = topo.link_ends - topo.n_nodes  # router ids; node ends become negative
    cls = np.asarray(topo.link_class)
    names = topo.link_class_names
    g, i, j = topo.router_coords(np.maximum(ends, 0))
    out = {"green": np.zeros((topo.cols, topo.cols)), "black": np.zeros((topo.rows, topo.rows)),
           "blue": np.zeros((topo.groups, topo.groups))}
    for key, a, b in (("green", j, j), ("black", i, i), ("blue", g, g)):
        pick = cls == names.index(key)
        if key != "blue" and group is not None:
            pick &= g[:, 0] == group
        np.add.at(out[key], (a[pick, 0], b[pick, 1]), traffic[pick])
    return out


def draw(topo: Any, traffic: np.ndarray, path: str | Path, title: str = "", group: int | None = None) -> Path:
    """The three matrices as heat maps (MB) in one PNG at ``path`` (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from fattorus.files import atomic_write

    mats = matrices(topo, traffic, group)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    where = "all groups" if group is None else f"group {group}"
    for ax, (key, m) in zip(axes, mats.items()):
        im = ax.imshow(m / 1e6, cmap="viridis")
        label = {"green": f"green (columns, {where})", "black": f"black (rows, {where})", "blue": "blue (groups)"}[key]
        ax.set_title(label, fontsize=10)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="MB")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110))
    plt.close(fig)
    return path
