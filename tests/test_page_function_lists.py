"""The page-function list lives once, in the registry: the CLI help names, README's table and the calls agree."""

from __future__ import annotations

import re

from conftest import REPO

from render.functions import calls, registry
from render.functions.names import functions


def _called(text: str) -> set[str]:
    """Every ``name(`` that opens a cell of a function table."""
    return set(re.findall(r"(?<![.\w])([a-z_]+)\(", text))


def test_the_cli_names_read_from_source_are_the_registry_in_its_order() -> None:
    assert functions() == tuple(registry.registry())
    # 27; paired, written, sources, context, between_sessions (issue 23); optimizer_timing, its summary, params,
    # gemm_clock, phase_peak (27); step_ratio (two runs not interleaved); session_spread (issue 38); host_wait,
    # trace_diff, energy (issue 43); nominal (a typed value labelled so, beside the measured one);
    # gemm_ceiling_series (issue 38, a ceiling over every session of its key); hvp_epoch (an H·v candidate over an
    # epoch of data batches)
    assert len(functions()) == 45


def test_every_registered_function_has_its_name_and_a_one_line_help() -> None:
    for name, entry in registry.registry().items():
        assert entry.function.__name__ == name
        assert entry.help and "\n" not in entry.help, name
        assert next(iter(entry.signature.parameters), None) != "page", name


def test_the_usage_the_cli_shows_is_the_registry_signature() -> None:
    assert calls.usage("fit") == "fit(ref, tokens=None, terms='auto', at=(), mode=None, unstable=False)"
    assert calls.usage("chart") == "chart(kind, *refs, **options)"


def test_registering_a_name_twice_is_refused() -> None:
    def fit(page: object) -> None:
        """A second fit."""

    try:
        registry.page_function(fit)
    except RuntimeError as exc:
        assert "registered twice" in str(exc)
    else:
        raise AssertionError("a second 'fit' was registered")
    assert registry.REGISTRY["fit"].function.__module__ == "render.functions.step_scaling"


def test_readme_table_lists_exactly_the_functions() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `") and "(" in line.split("|")[1]]
    assert _called(" ".join(row.split("|")[1] for row in rows)) == set(registry.registry())


def test_a_missing_name_is_found() -> None:
    assert _called("``fit(sweep, ...)``  ``.share(W)``  median(arm)") == {"fit", "median"}
