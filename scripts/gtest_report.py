#!/usr/bin/env python3
"""Counts and checks the GoogleTest cases a ctest run executed; prints the slowest.

Usage: gtest_report.py BUILD_DIR [--label LABEL] [--ctest-log LOG] [--slowest N] [--name NAME]

Every test executable of tests/CMakeLists.txt is one ctest test (or one per gtest shard) that
writes its GoogleTest XML report to BUILD_DIR/test-results/<ctest name>.xml. After a ctest run,
this script reads the tests ctest knows (`ctest --show-only=json-v1`, with `-L LABEL`), and for
every executable:
  - checks that each of its ctest tests wrote a report (a missing report: the test did not run);
  - compares the cases its reports ran (over all shards) with the cases the executable lists
    (`--gtest_list_tests` under the same GTEST_FILTER as the run, DISABLED_ cases left out): a
    case missing from the reports, or run twice, is an error, so a shard set-up or a filter that
    drops cases fails the step instead of testing less in silence.
Then prints one summary line ("gtest NAME: C cases in E executables: P passed, S skipped,
F failed; D disabled"), the N slowest ctest tests (from LOG, ctest's own output) and the N
slowest GoogleTest cases.

Exit status: 0 when the check holds, 1 when it does not (or a report cannot be read), 2 for bad
arguments. Only the Python standard library is used.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def ctest_tests(build_dir, label):
    cmd = ["ctest", "--test-dir", build_dir, "--show-only=json-v1"]
    if label:
        cmd += ["-L", label]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out).get("tests", [])


def xml_path(command):
    for arg in command[1:]:
        if arg.startswith("--gtest_output=xml:"):
            return arg[len("--gtest_output=xml:"):]
    return None


def listed_cases(exe, cwd):
    env = dict(os.environ)
    env.pop("GTEST_TOTAL_SHARDS", None)
    env.pop("GTEST_SHARD_INDEX", None)
    out = subprocess.run([exe, "--gtest_list_tests"], check=True, capture_output=True, text=True,
                         env=env, cwd=cwd or None).stdout
    cases, suite = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()  # "Suite." (or "Prefix/Suite.")
            continue
        name = line.split("#")[0].strip()
        full = suite + name
        if "DISABLED_" in full:
            continue
        cases.append(full)
    return cases


def read_report(path):
    """[(full name, outcome, seconds)] of one gtest XML report; outcome: passed/skipped/failed/disabled."""
    rows = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        full = f"{tc.get('classname')}.{tc.get('name')}"
        if tc.get("status") == "notrun" or tc.get("result") == "suppressed":
            outcome = "disabled"
        elif tc.find("failure") is not None or tc.find("error") is not None:
            outcome = "failed"
        elif tc.get("result") == "skipped" or tc.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        rows.append((full, outcome, float(tc.get("time") or 0.0)))
    return rows


def ctest_times(log):
    rows = []
    pat = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?(\w[\w ]*?)\s+([\d.]+) sec")
    with open(log, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                rows.append((float(m.group(3)), m.group(1), m.group(2)))
    return sorted(rows, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--label", default="")
    ap.add_argument("--ctest-log", default="")
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--name", default="", help="name of the run in the summary line")
    args = ap.parse_args()
    if args.slowest < 0:
        print("gtest_report: --slowest must be >= 0", file=sys.stderr)
        return 2

    errors = []
    by_exe = collections.defaultdict(list)  # executable -> [(ctest name, report path, cwd)]
    for t in ctest_tests(args.build_dir, args.label):
        path = xml_path(t.get("command") or [])
        if path is None:
            continue  # not a GoogleTest executable (layering, headers_self_contained)
        cwd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), "")
        by_exe[t["command"][0]].append((t["name"], path, cwd))
    if not by_exe:
        errors.append(f"no GoogleTest executables registered with ctest in {args.build_dir}"
                      + (f" (label {args.label})" if args.label else ""))

    outcomes = collections.Counter()
    cases = []
    for exe, tests in sorted(by_exe.items()):
        ran = collections.Counter()
        for name, path, _ in tests:
            if not os.path.isfile(path):
                errors.append(f"{name}: no GoogleTest report {path} (the test did not run, or crashed)")
                continue
            try:
                rows = read_report(path)
            except ET.ParseError as e:
                errors.append(f"{name}: unreadable report {path}: {e}")
                continue
            for full, outcome, sec in rows:
                outcomes[outcome] += 1
                if outcome != "disabled":
                    ran[full] += 1
                    cases.append((sec, full, outcome))
        expected = listed_cases(exe, tests[0][2])
        missing = [c for c in expected if c not in ran]
        twice = [c for c, n in ran.items() if n > 1]
        extra = [c for c in ran if c not in set(expected)]
        base = os.path.basename(exe)
        if missing:
            errors.append(f"{base}: {len(missing)} listed cases not in its reports, e.g. {missing[0]}")
        if twice:
            errors.append(f"{base}: {len(twice)} cases ran in more than one shard, e.g. {twice[0]}")
        if extra:
            errors.append(f"{base}: {len(extra)} cases in its reports not listed, e.g. {extra[0]}")

    run = outcomes["passed"] + outcomes["skipped"] + outcomes["failed"]
    print(f"gtest {args.name or args.build_dir}: {run} cases in {len(by_exe)} executables: "
          f"{outcomes['passed']} passed, {outcomes['skipped']} skipped, {outcomes['failed']} failed; "
          f"{outcomes['disabled']} disabled")
    if args.slowest and args.ctest_log and os.path.isfile(args.ctest_log):
        print(f"  the {args.slowest} slowest ctest tests (one per executable or shard):")
        for sec, name, status in ctest_times(args.ctest_log)[:args.slowest]:
            print(f"    {sec:8.1f} s  {name} ({status})")
    if args.slowest and cases:
        print(f"  the {args.slowest} slowest GoogleTest cases:")
        for sec, full, outcome in sorted(cases, reverse=True)[:args.slowest]:
            print(f"    {sec:8.1f} s  {full}" + ("" if outcome == "passed" else f" ({outcome})"))
    for e in errors:
        print(f"gtest_report: ERROR: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
