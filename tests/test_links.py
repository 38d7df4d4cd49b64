"""Where a number's link lands (rows, a value's column, the machine table, one link per document); path scrubbing."""

from __future__ import annotations

from render.numbers import links
from render.numbers.quantity import Quantity

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def test_rows_anchor_names_one_row_a_run_or_runs() -> None:
    assert links.rows_anchor([95, 96, 97, 98, 99]) == "samples-r95-99"
    assert links.rows_anchor([12]) == "row-12"
    assert links.rows_anchor([9, 3, 4, 5, 12, 4]) == "samples-r3-5_9_12"
    assert links.rows_anchor([]) == "samples"
    assert links.rows_anchor([499, 500]) == "samples"  # row 500 is only in the CSV download
    assert links.rows_anchor([-1, 0]) == "samples"


def test_with_column_names_the_value_column_when_it_is_id_safe() -> None:
    assert links.with_column("samples-r95-99", "time_s") == "samples-r95-99~time_s"
    assert links.with_column("row-3", "step_s") == "row-3~step_s"
    assert links.with_column("samples", "time_s") == "samples"  # the whole table: no row to scroll along
    assert links.with_column("row-3", 'a"b') == "row-3"


def test_anchor_href_lands_on_the_first_row_and_names_every_row_in_the_query() -> None:
    assert links.anchor_href("samples-r95-99~time_s") == "?rows=95-99&col=time_s#row-95"
    assert links.anchor_href("samples-r3-5_9") == "?rows=3-5_9#row-3"
    assert links.anchor_href("row-3~x") == "?rows=3&col=x#row-3"
    assert links.anchor_href("row-3") == "#row-3"
    assert links.anchor_href("") == "#samples"
    assert links.anchor_href("params-batch") == "#params-batch"
    assert links.anchor_href("machine-power_limit_w") == "#machine-power_limit_w"


def test_machine_anchor() -> None:
    assert links.machine_anchor("power_limit_w") == "machine-power_limit_w"
    assert links.machine_anchor("clocks.sm_mhz_before") == "machine-clocks.sm_mhz_before"
    assert links.machine_anchor("a b") == "machine"


def test_scrub_paths_replaces_absolute_paths_of_the_measuring_host() -> None:
    s = links.scrub_paths
    assert (
        s("--corpus /root/.pyenv/versions/3.11.7/lib/python3.11 --glob '**/*.py'") == "--corpus <dir> --glob '**/*.py'"
    )
    assert s("--checkpoint-dir=/root/out/harness") == "--checkpoint-dir=<dir>"
    assert s("'/home/u/runs/x y'") == "'<dir> y'"
    assert s("~/data and C:\\runs\\a") == "<dir> and <dir>"
    assert s("see https://github.com/a/b and 2026/11/29, tok/s, runs/sweep, /") == (
        "see https://github.com/a/b and 2026/11/29, tok/s, runs/sweep, /"
    )


def test_a_number_from_two_documents_links_each() -> None:
    q = Quantity(2.0, "s", evidence=(A, B), derivation="a / b", key="k", anchor="samples-r1-2~step_s")
    md = q.markdown("records/x/v1.md")
    first = f"[2.00{chr(0x202F)}s](../../evidence/{'a' * 64}.md?rows=1-2&col=step_s#row-1 "
    assert md.startswith(first)
    assert md.endswith(f' [\\[2\\]](../../evidence/{"b" * 64}.md#samples "evidence 2 of 2: sha256:bbbbbbbbbbbb")')
    one = Quantity(2.0, "s", evidence=(A,), derivation="d", key="k", anchor="machine-power_limit_w")
    assert (
        one.markdown("index.md") == f'[2.00{chr(0x202F)}s](evidence/{"a" * 64}.md#machine-power_limit_w "{one.title}")'
    )


def test_a_combined_number_keeps_each_operands_rows() -> None:
    a = Quantity(4.0, "s", evidence=(A,), key="a", anchor="samples-r0-4")
    b = Quantity(2.0, "s", evidence=(B,), key="b", anchor="row-7")
    q = a / b
    assert q.evidence == (A, B) and q.anchor == "samples-r0-4" and q.more_anchors == ("row-7",)
    assert "#row-7" in q.markdown("index.md")


def test_a_records_reproduce_command_and_environment_show_no_host_path_and_the_dirty_flag() -> None:
    from render.pages import provenance

    declared = {
        "padding": {
            "version": 1,
            "options": {
                "corpus": {"flag": "--corpus", "kind": "value", "default": None},
                "glob": {"flag": "--glob", "kind": "value", "default": "**/*"},
            },
        }
    }
    doc = {
        "probe": "padding",
        "probe_version": 1,
        "params": {"corpus": "/root/.pyenv/versions/3.11.7/lib/python3.11", "glob": "**/*.py"},
        "machine": {"gpu": "NVIDIA H200", "power_limit_w": 700.0},
        "code": {"dirty": True, "git_commit": "abc"},
    }
    cmd, _ = provenance.command(doc, declared)
    assert cmd == "probebook measure padding --corpus '<dir>' --glob '**/*.py'"
    block = provenance.environment_block("records/x/v1.md", {"run": A}, {A: doc})
    assert "| uncommitted changes in the measuring tree | yes (the git commit above does not hold the code" in block
    assert f"(../../evidence/{'a' * 64}.md#machine-power_limit_w " in block  # the power limit lands on its row
