"""Optional packages, imported on first use.

paclo needs only numpy and pyarrow. pandas, polars, duckdb, matplotlib and dask are imported
where a function needs them, through :func:`require`, so that a missing one is reported as
the extra that installs it rather than as a bare ``No module named ...``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The top-level package of each optional module, and the paclo extra that installs it.
EXTRAS: dict[str, str] = {
    "pandas": "pandas",
    "polars": "polars",
    "duckdb": "duckdb",
    "matplotlib": "plot",
    "dask": "dask",
    "distributed": "dask",
}


class MissingExtraError(ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def install_hint(module: str) -> str:
    """The pip command that installs ``module`` as a paclo extra."""
    extra = EXTRAS.get(module.split(".", 1)[0])
    if extra is None:
        return f"pip install {module.split('.', 1)[0]}"
    return f'pip install "paclo[{extra}]"'


def require(module: str, *, purpose: str | None = None) -> ModuleType:
    """Import ``module`` (e.g. ``"matplotlib.pyplot"``) or raise :class:`MissingExtraError`.

    The error names the package, what needed it (``purpose``) and the install command.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".", 1)[0]
        # Only the package itself being absent is a missing extra; a broken install of it
        # (one of its own imports failing) is reported as it is.
        if e.name is None or e.name.split(".", 1)[0] != top:
            raise
        what = f" for {purpose}" if purpose else ""
        raise MissingExtraError(
            f"{top} is needed{what} but is not installed: {install_hint(top)}",
            name=e.name,
        ) from e
