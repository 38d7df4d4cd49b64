"""`probebook derive NAME ID ...`: every page function from the shell on real archived evidence, the same numbers a
page shows (checked against a page rendered from the same expression), JSON without NaN, and one-line refusals."""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

import pytest

from render.evidence.archive import load_evidence
from render.functions.batch import batch_models
from render.functions.derivations import Library
from render.functions.page import Page
from render.functions.registry import registry
from render.pages import sources
from render.pages.sandbox import PageState, make_environment, render_body

REPO = Path(__file__).resolve().parent.parent
SITE_ARCHIVE = REPO / "tests" / "fixtures" / "site" / "archive"
H200_ARCHIVE = REPO / "archive"
DDP_ARCHIVE = REPO / "tests" / "fixtures" / "ddp" / "archive"
CORRECTNESS_ARCHIVE = REPO / "tests" / "fixtures" / "correctness" / "archive"
IDS = {
    "sweep": "sha256:08e78675deb8fd5dd2f23023a7b01a3f923ee546a24aba8d2990210900bc4c1d",
    "ceiling": "sha256:0b64533f8163490ec04db0d6cbbf16414f7ed77275b02703e5f935e983692c78",
    "batch": "sha256:63cc7d4ea38d69bc16d9c3a3a61dd2237108e09c1abe06c3d5bda0b9def85b42",
    "mem": "sha256:5d0d0cac33d1c2f3177ecc91781f972a76c7534dc35d06e14ff4ce4f4adeef1a",
    "ablation": "sha256:f581ac542e3b3d0731cb6b164161aadc74d1783df44c49a8c4162546bed55c5c",
    "kernels": "sha256:051dc10c7475de09384f2958954f21bb66fc7af2fe04ace7dee9e3362c2c0199",  # the H200 250m eager run
    "padding": "sha256:eebdc310478c5d8ffc0f0d7ce4db32d5bccca301ca174660e6706fc71b08bd4d",  # CPython stdlib corpus
    "mask": "sha256:7318bdd0e4dc462bfa1ae632c2052abecfb220203e2a197c53a45d4519012373",  # H200 mask probe
    "ddp": "sha256:70258d760133552942bdf9c14bbc2e463a9beb7b9b3651767684de2530561c1a",  # 2-process CPU fixture
    "agreement": "sha256:8470ea3a14dd877844c3923cec44e13db6d59e0bfe1578c9b0e2502b8e6f5059",  # tiny CPU fixtures
    "stream": "sha256:9119ce668cc38cf436f577fa22eaa81f2b10e3927a522bc8fbfa3090cb9d57ea",
    "hvp": "sha256:3bd8e982da7d260dbc176450d87e2281caf8e6cfbda962de1d44090429cd0a0f",
    "util": "sha256:058b3c46b8703f4d64f20c56209d84629ae20b721380b9867d805fd591ff519a",  # H200 250m, NVML by UUID
    "campaign": "sha256:4e7724fd20320fe54d949fc52b4b999fe09b175b4367855d79073ef1d85bded7",  # H200 batch-sweep campaign
    "rounds": "sha256:8db8990cc803afb5cb2677baad5bb1659a5af56875c11a81dbeb75ec1f41f15d",  # H200 250m ablation
    "hvp_v3": "sha256:4067d968c806f8007e2b50bfadb6a8a2f383c1bd790ed33d2a4d99909374d8b5",  # H200 20m, 2026-12-02
    "followup": "sha256:4f808d19f974082ddba5f55471d5c77cffa28117d585c1c395b901025a290c74",  # H200 optimizer follow-up
    "lora": "sha256:217105387d6e7264a2fb16a8d40d536739e60bc57a2e67fa36474b771a791049",  # H200 LoRA plug-in
    "gemm2": "sha256:8dbf7fe62f8ef5a3c6b28f743b096f42aac074ce1d65311b83e424a8b7941905",  # H200 gemm v2: SM clocks
    "lossmem": "sha256:6a186eaa0dd08f08410cffa52bf5e6018cf9e5f4383c7abb40832390f9b96036",  # phase peaks
    "moe_looped": "sha256:23cd57e1a6a9ed9dafa8e6cc3d7ca89e729431d7539a7e7ac1a259c3adfa4418",  # H200 kernels v5, looped
    "moe_grouped": "sha256:62fc33c39b32e1553301061952c3e20e5c207667625a488fbc90e81e10c106de",  # same session, grouped
}
RATE = "batch_summary(ev).fastest_tok_s"

# page function -> (archive, evidence, shell words after the id, the same call as a page writes it)
CASES: dict[str, tuple[Path, str, tuple[str, ...], str]] = {
    "fit": (SITE_ARCHIVE, "sweep", ("--tokens", "512:", "--at", "4096"), 'fit(ev, tokens="512:", at=4096)'),
    "value": (SITE_ARCHIVE, "ceiling", ("params.windows",), 'value(ev, "params.windows")'),
    "median": (SITE_ARCHIVE, "ablation", ("step_s", "--arm", "baseline"), 'median(ev, "step_s", arm="baseline")'),
    "saving": (SITE_ARCHIVE, "ablation", ("no-attention",), 'saving(ev, "no-attention")'),
    "batch_summary": (SITE_ARCHIVE, "batch", (), "batch_summary(ev)"),
    "batch_models": (SITE_ARCHIVE, "batch", ("--stable", "true"), "batch_models(ev, stable=true)"),
    "campaign_time": (H200_ARCHIVE, "campaign", (), "campaign_time(ev)"),
    "loss_memory": (SITE_ARCHIVE, "mem", ("eager",), 'loss_memory(ev, "eager")'),
    "logit_bytes": (SITE_ARCHIVE, "mem", ("eager", "chunked"), 'logit_bytes(ev, "eager", "chunked")'),
    "gemm_ceiling": (SITE_ARCHIVE, "ceiling", (), "gemm_ceiling(ev)"),
    "gemm_ceiling_series": (H200_ARCHIVE, "gemm2", ("square-8192",), 'gemm_ceiling_series(ev, "square-8192")'),
    "kernel_share": (H200_ARCHIVE, "kernels", ("attention",), 'kernel_share(ev, "attention")'),
    "kernel_time": (H200_ARCHIVE, "kernels", ("optimizer",), 'kernel_time(ev, "optimizer")'),
    "padding": (H200_ARCHIVE, "padding", (), "padding(ev)"),
    "mask_cost": (H200_ARCHIVE, "mask", (), "mask_cost(ev)"),
    "ddp": (DDP_ARCHIVE, "ddp", (), "ddp(ev)"),
    "agreement": (CORRECTNESS_ARCHIVE, "agreement", ("bf16",), 'agreement(ev, "bf16")'),
    "stream": (CORRECTNESS_ARCHIVE, "stream", ("resident",), 'stream(ev, "resident")'),
    "utilisation": (H200_ARCHIVE, "util", ("4096",), "utilisation(ev, 4096)"),
    "hvp": (
        CORRECTNESS_ARCHIVE,
        "hvp",
        ("double-backward", "eager", "fp32", "1"),
        'hvp(ev, "double-backward", "eager", "fp32", 1)',
    ),
    "hvp_speedup": (
        CORRECTNESS_ARCHIVE,
        "hvp",
        ("double-backward", "forward-over-reverse", "--dtype", "fp32"),
        'hvp_speedup(ev, "double-backward", "forward-over-reverse", dtype="fp32")',
    ),
    "claim": (
        SITE_ARCHIVE,
        "sweep",
        ("fit(ev).c > fit(ev).max_residual", "The fixed part is above the residuals."),
        "",
    ),
    "project": (SITE_ARCHIVE, "batch", (RATE, "250M"), f'project({RATE}, "250M")'),
    "mfu": (SITE_ARCHIVE, "batch", (RATE, "1971859200", "--peak", "gemm_ceiling(ev2)", "--ev2", IDS["ceiling"]), ""),
    "share_of": (
        SITE_ARCHIVE,
        "mem",
        ('loss_memory(ev, "chunked").per_microbatch', 'loss_memory(ev, "eager").per_microbatch'),
        'share_of(loss_memory(ev, "chunked").per_microbatch, loss_memory(ev, "eager").per_microbatch)',
    ),
    "constant": (SITE_ARCHIVE, "sweep", ("cv_threshold",), 'constant("cv_threshold")'),
    "nominal": (SITE_ARCHIVE, "sweep", ("260M", "a round size"), 'nominal("260M", "a round size")'),
    "session_spread": (H200_ARCHIVE, "rounds", ("step",), 'session_spread("step")'),
    "paired": (H200_ARCHIVE, "rounds", ("no-optimizer",), 'paired(ev, "no-optimizer")'),
    "written": (H200_ARCHIVE, "rounds", (), "written(ev)"),
    "context": (SITE_ARCHIVE, "sweep", (), ""),
    "between_sessions": (
        H200_ARCHIVE,
        "hvp_v3",
        (
            'hvp(ev, "forward-over-reverse", "eager", "fp32", 1).warm',
            'hvp(ev2, "forward-over-reverse", "eager", "fp32", 1).warm',
            "--ev2",
            "sha256:a9a6a74cc146c9f2c7d5c6ce7dac5dd6c26c71579ffb93dc2997bcc1291c0fa4",  # the same run, 2026-11-30
        ),
        "",
    ),  # a mark, no number: checked on a built page (test_comparative_lint)
    "sources": (H200_ARCHIVE, "util", (), "sources(ev)"),
    "step_ratio": (
        H200_ARCHIVE,
        "moe_looped",
        ("ev2", "--field", "data.event_step.windows_s", "--ev2", IDS["moe_grouped"]),
        "",
    ),  # two evidence documents: its exact value is checked below
    "optimizer_timing": (H200_ARCHIVE, "followup", (), ""),  # a list of views: checked by its summary below
    "optimizer_timing_summary": (H200_ARCHIVE, "followup", (), "optimizer_timing_summary(ev)"),
    "params": (H200_ARCHIVE, "lora", (), "params(ev)"),
    "gemm_clock": (H200_ARCHIVE, "gemm2", ("--shape", "square-8192"), 'gemm_clock(ev, shape="square-8192")'),
    "phase_peak": (H200_ARCHIVE, "lossmem", ("warmup", "--arm", "chunked"), 'phase_peak(ev, "warmup", arm="chunked")'),
    # an archived v6 profile records no attribution: each attribute is its note (a real value: tests/test_trace_pages)
    "host_wait": (H200_ARCHIVE, "kernels", (), ""),
    "trace_diff": (H200_ARCHIVE, "moe_looped", ("ev2", "--ev2", IDS["moe_grouped"]), ""),  # a table
    # an archived run from before energy was recorded: each attribute is its note (values: tests/test_energy_render)
    "energy": (H200_ARCHIVE, "rounds", ("--arm", "baseline"), ""),
    "chart": (SITE_ARCHIVE, "sweep", ("step-scaling",), ""),
    "table": (SITE_ARCHIVE, "mem", ("loss-memory",), ""),
}


def derive(cli, archive: Path, *words: str):
    return cli("--archive", str(archive), "derive", *words)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    """Every case through the CLI's own entry point with --json, in this process (``conftest.run_cli_here``: no
    new interpreter per case); the real ``probebook`` process is run by the text, claim and refusal tests below."""
    from probebook.cli import derive as derive_cli
    from tests.conftest import run_cli_here

    # each case read its whole archive again (``_archive_docs``: the repository's for most, about 220 documents),
    # 8.6 s of the 14 s these cases took; here each archive is read once by that same function and every later case
    # gets its own copy of the mapping (the command adds its ids' documents to it). Nothing writes to the archives
    read: dict[str, dict[str, dict]] = {}
    archive_docs = derive_cli._archive_docs

    def read_once(store):
        key = str(store.root)
        if key not in read:
            read[key] = archive_docs(store)
        return dict(read[key])

    out = tmp_path_factory.mktemp("derive-files")
    done = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(derive_cli, "_archive_docs", read_once)
        for name, (archive, alias, words, _) in CASES.items():
            done[name] = run_cli_here(
                "--archive", str(archive), "derive", name, IDS[alias], *words, "--json", "--out", str(out)
            )
    for name, proc in done.items():
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
        assert proc.stderr == "", f"{name}: {proc.stderr}"
    return {name: json.loads(proc.stdout, parse_constant=_no_constant) for name, proc in done.items()}


def _no_constant(text: str):
    raise AssertionError(f"JSON holds {text}")


@functools.cache
def _library(archive: Path) -> Library:
    """One ``Library`` per archive for every page rendered here, as one build shares one across its pages: each
    archive is read once and each derivation (a fit's bootstrap) computed once, not once per case and attribute
    (about 9 s of CPU)."""
    return Library(load_evidence(archive).docs)


def page_values(archive: Path, expression: str, ident: str, tmp_path: Path) -> dict[str, float | None]:
    """The ledger values a page shows for ``{{ expression }}`` and, for a view, each of its attributes."""
    library = _library(archive)
    fns = Page(library, {"ev": ident, "ev2": IDS["ceiling"]} if archive == SITE_ARCHIVE else {"ev": ident})
    rel = "records/x/v1.md"
    page = sources.parse_page(tmp_path / rel, rel, "page", "{{ " + expression + " }}")
    state = PageState(rel)
    render_body(make_environment({rel: (page.body, str(tmp_path / rel))}), page, fns.context(), state)
    return {key: q.value for key, q in state.rows}


# page functions no archived document can answer yet (every run in these archives predates what they read): each is
# refused in one line saying why; its values are checked on literal documents (tests/test_hvp_epoch.py)
REFUSED: dict[str, tuple[Path, str, tuple[str, ...], str]] = {
    "hvp_epoch": (
        H200_ARCHIVE,
        "hvp_v3",
        ("forward-over-reverse",),
        "no epoch statistics: it was measured on one batch",
    ),
}


def test_every_page_function_has_a_case():
    assert set(CASES) | set(REFUSED) == set(registry()) and not set(CASES) & set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_function_no_archived_run_can_answer_is_refused_in_one_line(name: str) -> None:
    from tests.conftest import run_cli_here

    archive, alias, words, why = REFUSED[name]
    proc = run_cli_here("--archive", str(archive), "derive", name, IDS[alias], *words, "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and why in proc.stderr, proc.stderr


SHOWN = [n for n, case in CASES.items() if case[3] and n not in ("fit", "batch_summary", "batch_models")]


@pytest.mark.parametrize("name", SHOWN)
def test_each_number_is_the_one_the_page_shows(results, name, tmp_path):
    archive, alias, _, expression = CASES[name]
    got = results[name]
    if set(got) == {"value", "unit", "interval", "basis", "derivation", "evidence"}:
        assert [got["value"]] == list(page_values(archive, expression, IDS[alias], tmp_path).values())
        if name in ("constant", "nominal"):
            assert got["evidence"] == []  # a number of the methods, or one typed and labelled: no measurement
        elif name == "session_spread":  # the archive's repeated runs, not the alias
            assert len(got["evidence"]) > 2 and got["interval"] is not None
        elif name == "gemm_ceiling_series":  # every session of the alias's configuration, the alias among them
            assert IDS[alias] in got["evidence"] and len(got["evidence"]) > 1 and got["interval"] is not None
        else:
            assert got["evidence"][0] == IDS[alias]
    else:  # a view: each attribute is the page's number
        for attr, q in ((a, q) for a, q in got.items() if isinstance(q, dict)):  # lists are notes and warnings
            page = page_values(archive, f"{expression}.{attr}", IDS[alias], tmp_path)
            assert [q["value"]] == list(page.values()), attr


def test_views_print_each_attribute_the_page_can_show(results, tmp_path):
    fit = results["fit"]
    assert list(fit) == ["c", "a", "b", "asymptote", "max_residual", "noise", "n_points", "share(4096)", "warnings"]
    for attr in ("c", "a", "b", "max_residual", "noise", "n_points", "share(4096)"):
        expression = 'fit(ev, tokens="512:")' + (".share(4096)" if attr == "share(4096)" else f".{attr}")
        assert [fit[attr]["value"]] == list(page_values(SITE_ARCHIVE, expression, IDS["sweep"], tmp_path).values())
        assert fit[attr]["evidence"] == [IDS["sweep"]]
    assert fit["asymptote"]["value"] is None  # a quadratic fit has no asymptote: null, never Infinity
    assert isinstance(fit["warnings"], list)
    assert results["batch_summary"]["fastest_tok_s"]["value"] == 97000.0  # tests/fixtures/site/inputs/batch.csv


def test_batch_models_prints_the_names_a_page_loops_over(results, tmp_path):
    assert results["batch_models"] == ["250m"]  # tests/fixtures/site/inputs/batch.csv: one model, stable points
    library = Library(load_evidence(SITE_ARCHIVE).docs)
    page = Page(library, {"ev": IDS["batch"]})
    assert batch_models(page, "ev", stable=True) == batch_models(page, "ev") == ["250m"]


def test_campaign_time_of_the_h200_campaign(results):
    got = {k: v["value"] for k, v in results["campaign_time"].items()}
    assert (got["points"], got["attempts"], got["runs"], got["trace"]) == (121, 121, None, None)  # version 1 points
    # timed: the mean over the points that ran timed windows (4.37 s); the run log's 3.86 s counted OOM points as 0
    assert round(got["wall"], 1) == 1748.2 and round(got["timed"], 2) == 4.37


def test_exact_values_from_the_fixture_evidence(results):
    median_s = statistics.median([0.000196, 0.000198, 0.000197, 0.000201, 0.000199])  # the fixture's windows
    assert results["gemm_ceiling"]["value"] == pytest.approx(2 * 4096**3 / median_s, rel=1e-12)
    assert results["gemm_ceiling"]["unit"] == "FLOP/s"
    assert results["loss_memory"]["per_microbatch"]["value"] == pytest.approx(1572864000, rel=1e-9)
    assert results["mfu"]["value"] == pytest.approx(97000 * 1971859200 / (2 * 4096**3 / median_s), rel=1e-12)
    assert results["mfu"]["evidence"] == [IDS["batch"], IDS["ceiling"]]
    assert results["project"]["time"]["value"] == pytest.approx(20 * 250e6 / 97000, rel=1e-12)
    assert results["value"] == {
        "value": 5,
        "unit": "",
        "interval": None,
        "basis": None,
        "derivation": "evidence field params.windows",
        "evidence": [IDS["ceiling"]],
    }


def test_step_ratio_is_the_ratio_of_the_two_runs_window_medians(results):
    looped = [0.45293096923828124, 0.51967333984375, 0.5040948486328125, 0.520906982421875, 0.5159989624023438]
    looped += [0.4672169494628906, 0.5257445678710938, 0.4845489196777344, 0.4519108581542969, 0.45972720336914064]
    grouped = [0.13706137084960937, 0.1367279815673828, 0.13500596618652344, 0.1376534881591797, 0.13793603515625]
    got = results["step_ratio"]  # the archived windows of data.event_step.windows_s, copied from the two runs
    assert got["value"] == statistics.median(looped) / statistics.median(grouped)
    assert got["evidence"] == [IDS["moe_looped"], IDS["moe_grouped"]]
    assert got["derivation"].startswith("median of 10 data.event_step.windows_s of ev / median of 5 of ev2; ")


def test_a_claim_prints_its_sentence_and_both_sides(results):
    claim = results["claim"]
    assert claim["sentence"] == "The fixed part is above the residuals."
    (one,) = claim["comparisons"]
    assert (one["op"], one["holds"]) == (">", True)
    assert one["left"]["derivation"].endswith("; c") and one["right"]["derivation"].endswith("; max_residual")
    assert one["left"]["value"] > one["right"]["value"]


def test_a_false_claim_is_one_line(cli):
    done = derive(cli, SITE_ARCHIVE, "claim", IDS["sweep"], "fit(ev).c < fit(ev).c", "Never.")
    assert done.returncode == 2 and done.stderr.startswith("probebook: error: claim 'Never.' is false: fit(ev).c = ")
    assert len(done.stderr.splitlines()) == 1


def test_chart_and_table_write_their_files(results):
    chart, table = results["chart"], results["table"]
    assert [Path(p).name for p in chart["files"]] == [
        "chart-step-scaling.svg",
        "chart-step-scaling.dark.svg",
        "chart-step-scaling.vl.json",
        "chart-step-scaling.dark.vl.json",
    ]
    assert Path(chart["files"][0]).read_text().startswith("<svg")
    assert "](chart-step-scaling.svg#only-light)" in chart["markdown"]
    assert [Path(p).name for p in table["files"]] == ["table-loss-memory.csv", "table-loss-memory.json"]
    assert Path(table["files"][0]).read_text().startswith("arm,microbatch")
    assert "[CSV](table-loss-memory.csv)" in table["markdown"]


def test_text_output_names_the_number_its_derivation_and_evidence(cli):
    done = derive(cli, SITE_ARCHIVE, "saving", IDS["ablation"][:19], "no-attention")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("saving(ev, no-attention)  ") and lines[0].endswith("%))")  # with its interval
    assert (
        lines[1]
        .strip()
        .startswith(
            "derivation: 1 − median step_s of arm no-attention / median step_s of arm baseline; 95% interval: the arms'"
        )
    )
    assert lines[2].strip() == f"evidence: {IDS['ablation']}"


@pytest.mark.parametrize(
    "words,message",
    [
        (
            ("nope", IDS["sweep"]),
            f"probebook: error: no page function 'nope'; the page functions are {', '.join(sorted(registry()))}",
        ),
        (
            ("fit", IDS["sweep"], "--bogus", "1"),
            "probebook: error: fit() has no option --bogus; its options are --tokens, --terms, --at, --mode, "
            "--unstable (call: fit(ref, tokens=None, terms='auto', at=(), mode=None, unstable=False))",
        ),
        (
            ("saving", IDS["ablation"], "a", "b", "c", "d"),
            "probebook: error: saving(): too many positional arguments; "
            "call it as saving(ref, arm, baseline='baseline', field='step_s')",
        ),
        (
            ("hvp_speedup", IDS["stream"], "eager", "compiled"),
            "probebook: error: hvp_speedup() needs hvp evidence; ev (sha256:9119ce668cc3) is stream evidence",
        ),
        (
            ("fit", IDS["batch"]),
            "probebook: error: fit() needs step-scaling evidence; ev (sha256:63cc7d4ea38d) is batch-sweep evidence",
        ),
    ],
)
def test_unknown_names_and_arguments_are_one_line(cli_here, words, message):
    # in this process (the refusals are the page functions' own); test_a_false_claim_is_one_line runs the real one
    done = derive(cli_here, CORRECTNESS_ARCHIVE if words[0] == "hvp_speedup" else SITE_ARCHIVE, *words)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.splitlines() == [message]
