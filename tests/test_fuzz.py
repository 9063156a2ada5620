"""Property tests for every parser: whatever the input, each answers with its own error type (one
line) or a result, never another exception, never a hang (a per-example deadline). Runs are
derandomized, so CI sees the same examples each time; inputs that once failed stay as @example."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

from arcops.box import firmware, journal, xe_events
from arcops.box.gpus import _bar_mib
from arcops.box.host import meminfo
from arcops.box.pcie import _speed
from arcops.common import numbers
from arcops.common.sysroot import SysRoot, parse_int, parse_number
from arcops.kernel import bundle, debs
from arcops.kernel.runparts_split import rewrite
from arcops.kernel.shellscan import ShellSyntaxError
from arcops.llama import allocprobe
from arcops.vllm import vllm_spec
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ, json_values

# --- shell: the lexer and the run-parts rewrite ------------------------------------------------------

FRAGMENTS = [
    "run-parts",
    "run-parts /etc/kernel/postinst.d /usr/share/kernel/postinst.d",
    'run-parts --arg="$1" $hookdirs',
    "/etc/kernel/x.d",
    '"$dir"',
    "'a b'",
    "$(",
    ")",
    "`",
    "${x:-y}",
    "$'q\\''",
    "<<EOF\n",
    "<<-'END'\n",
    "\nEOF\n",
    "<<<",
    ">/dev/null",
    "2>&1",
    " && ",
    " || ",
    "; ",
    "\n",
    " | ",
    "if [ -d x ]; then ",
    "fi",
    "for d in a b; do ",
    "done",
    "eval ",
    "sh -c ",
    "exec ",
    "nice -n 5 ",
    "timeout -k 5 10 ",
    "env A=1 ",
    "command ",
    "busybox ",
    "su root -c ",
    "flock /run/l ",
    "xargs ",
    "case $1 in a) ",
    " ;; esac",
    '"$@"',
    "r\\un-parts",
    "# comment ",
    "\\\n",
    "'",
    '"',
    "x=1 ",
]
scripts = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(lambda parts: "#!/bin/sh\n" + "".join(parts))


@FUZZ
@given(st.one_of(scripts, st.text(max_size=400)))
@example("#!/bin/sh\nrun-parts /a /b <<")  # IndexError at end of input, once
@example("#!/bin/sh\nrun-parts /a " + "$(" * 3000)  # RecursionError, once
@example("#!/bin/bash\ncat <<<x && run-parts /a /b\n")  # refused as a here-document, once
@example("#!/bin/sh\nx=$(case a in a) run-parts /a /b ;; esac)\n")  # a pattern's ")" ended $(...), once
def test_rewrite_answers_with_a_result_or_a_syntax_error(script):
    try:
        new, changes = rewrite(script)
    except ShellSyntaxError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert isinstance(new, str)
    if changes:
        again, more = rewrite(new)
        assert more == [] and again == new  # idempotent: a rewritten call is one directory


@settings(FUZZ, max_examples=60)
@given(scripts)
def test_a_rewrite_of_a_script_dash_accepts_is_accepted_by_dash(script):
    def parses(text: str) -> bool:
        return subprocess.run(["dash", "-n"], input=text.encode(), capture_output=True).returncode == 0

    if not parses(script):
        return
    try:
        new, changes = rewrite(script)
    except ShellSyntaxError:
        return
    assert not changes or parses(new), new


# --- archives and blobs ------------------------------------------------------------------------------

AR_HEADERISH = st.builds(
    lambda name, size, body: f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{size:<10}`\n".encode() + body,
    st.sampled_from(["debian-binary", "control.tar.gz", "data.tar.xz", "x", "/"]),
    st.one_of(st.integers(-5, 70), st.just(10**9)),
    st.binary(max_size=80),
)


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300), st.lists(AR_HEADERISH, max_size=4).map(lambda m: b"!<arch>\n" + b"".join(m))
    )
)
def test_deb_layout_refuses_anything_that_is_not_a_deb(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("deb") / "x.deb"
    path.write_bytes(data)
    try:
        found = debs.layout(path)
    except debs.DebError as e:
        assert "\n" not in str(e)
        return
    assert [m.name for m in found][:1] == ["debian-binary"]


@FUZZ
@given(st.binary(max_size=600))
def test_firmware_header_refuses_anything_that_is_not_a_blob(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fw") / "bmg_guc_70.bin"
    path.write_bytes(data)
    try:
        found = firmware.blob_version(path)
    except firmware.FirmwareError:
        return
    assert all(isinstance(getattr(found, k), int) for k in ("major", "minor", "patch"))


# --- JSON documents: bundle locks and probe reports -----------------------------------------------------

LOCK_KEYS = ["format", "installer", "version", "flavour", "kernel_release", "packages", "firmware"]


@FUZZ
@given(st.one_of(json_values, st.dictionaries(st.sampled_from(LOCK_KEYS), json_values)))
def test_lock_shape_check_names_problems_and_never_raises(lock):
    problems = bundle.lock_problems(lock)
    assert isinstance(problems, list) and all(isinstance(p, str) and "\n" not in p for p in problems)


PROBE_KEYS = ["probe", "format", "outcome", "exit_code", "bytes", "results", "devices", "level_zero_driver"]


def _probe_like(fields: dict) -> str:
    return json.dumps({"probe": "arcops-alloc-probe", "format": 1, **fields}, allow_nan=True)


@FUZZ
@given(
    st.one_of(
        st.text(max_size=200),
        st.dictionaries(st.sampled_from(PROBE_KEYS), json_values).map(_probe_like),
    )
)
@example(_probe_like({"outcome": "measured", "exit_code": 0, "bytes": 0, "results": []}))  # passed, once
@example(_probe_like({"outcome": "measured", "exit_code": 0, "bytes": 1, "results": [None]}))
def test_probe_report_parse_then_verdict_never_passes_garbage(text):
    try:
        report = allocprobe.parse(text)
    except allocprobe.ProbeError as e:
        assert "\n" not in str(e)
        return
    found = allocprobe.verdict(report)
    assert found.ok is False or report["exit_code"] == allocprobe.EXIT_MEASURED
    if found.ok:
        assert report["bytes"] > 0 and all(
            math.isfinite(c["host_ram_fraction"]) for c in found.costs.values()
        )


# --- kernel log lines and journal entries ---------------------------------------------------------------

XE_WORDS = [
    "xe 0000:29:00.0: [drm] ",
    "Tile0: GT0: ",
    "Engine reset: ",
    "engine_class=bcs, ",
    "guc_id=",
    "Timedout job: ",
]


@FUZZ
@given(
    st.one_of(st.text(max_size=300), st.lists(st.sampled_from(XE_WORDS) | st.text(max_size=8)).map("".join))
)
def test_xe_line_parser_returns_an_event_or_nothing(line):
    event = xe_events.parse_line(line)
    assert event is None or event.kind in xe_events.KINDS


@FUZZ
@given(st.one_of(st.text(max_size=200), json_values.map(lambda v: json.dumps({"MESSAGE": v}))))
def test_any_journal_entry_becomes_text(line):
    assert isinstance(journal._message(line), str)


# --- vLLM settings ------------------------------------------------------------------------------------

setting_values = st.one_of(
    json_values,
    st.sampled_from(["ring", "direct:0-8;ring:9-max", "latest", "0.0.0.0", "eager", "--no-enforce-eager"]),
)


@FUZZ
@given(
    st.dictionaries(st.sampled_from(sorted(vllm_spec.DEFAULTS)), setting_values, max_size=6),
    st.one_of(st.none(), st.floats(allow_nan=True)),
)
def test_vllm_render_refuses_or_renders_never_crashes(given_settings, mem):
    try:
        spec = vllm_spec.render(given_settings, mem)
    except vllm_spec.SpecError as e:
        assert e.problems and all(isinstance(p, str) for p in e.problems)
        return
    assert not any(vllm_spec.uses_ring(v) for k, v in spec["env"].items() if k.upper() == "CCL_ALLREDUCE")


# --- sysfs and procfs values ------------------------------------------------------------------------


@FUZZ
@given(st.text(max_size=30))
@example("1.5")
@example("\u00b2")  # '²'.isdigit() is True, int('²') fails
@example("1.2.3")
def test_sysfs_number_parsers_answer_a_number_or_none(text):
    value = parse_int(text)
    assert value is None or (text.isascii() and value == int(text))
    number = parse_number(text)
    assert number is None or math.isfinite(number)
    assert _speed(text + " GT/s") is None or math.isfinite(_speed(text + " GT/s"))
    assert _bar_mib(text, 0) is None or _bar_mib(text, 0) >= 0


@FUZZ
@given(st.text(max_size=200))
def test_meminfo_of_any_text_is_a_mapping_of_byte_counts(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("proc")
    (root / "proc").mkdir()
    (root / "proc" / "meminfo").write_text(text, encoding="utf-8", errors="surrogateescape")
    values = meminfo(SysRoot(root))
    assert all(isinstance(v, int) and v >= 0 for v in values.values())


NUMBER_TEXT = st.one_of(
    st.text(max_size=60),
    st.from_regex(r"-?[0-9]{1,400}(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,4})?", fullmatch=True),
)


@FUZZ
@given(NUMBER_TEXT, st.booleans())
@example("9" * 31, True)  # past the 30 digits a tool writes: refused, never a huge int
@example("1e400", False)  # infinite as a float: refused
def test_number_text_is_a_finite_number_in_range_or_a_number_error(text, whole):
    try:
        found = numbers.from_text(text, "x", -(2**63), 2**63, whole=whole)
    except numbers.NumberError as e:
        assert "\n" not in str(e) and len(str(e)) < 200
        return
    assert math.isfinite(found) and -(2**63) <= found <= 2**63
    assert not whole or isinstance(found, int)


def test_the_fuzz_tier_covers_every_parser_module():
    """A new parser module gets a property test here: this list is the reminder."""
    covered = {
        "shellscan",
        "runparts_split",
        "debs",
        "firmware",
        "bundle",
        "allocprobe",
        "xe_events",
        "journal",
    }
    # shell_commands: through the rewrite, whose fragments carry its runners (nice, timeout, su -c, ...).
    covered |= {"vllm_spec", "sysroot", "pcie", "gpus", "host", "numbers", "shell_commands"}
    source = Path(__file__).read_text()
    assert all(name in source for name in covered)
