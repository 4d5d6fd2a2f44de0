#!/usr/bin/env python3
"""Compares mpi_bytes.so's counts (<prefix>.<rank>.json) with test_mpi_bytes's expectations
(<prefix>.<rank>.expect.json). Usage: check.py PREFIX NRANKS. Prints PASS/FAIL per case."""
import json
import sys

prefix, P = sys.argv[1], int(sys.argv[2])
got = [json.load(open(f"{prefix}.{r}.json")) for r in range(P)]
exp = [json.load(open(f"{prefix}.{r}.expect.json")) for r in range(P)]
fails = 0


def case(name, ok, detail):
    global fails
    fails += not ok
    print(f"  {'PASS' if ok else 'FAIL'}  {name:<34} {detail}")


g = exp[0]["grid"]
print(f"P={P} planner={exp[0]['planner']} grid={g[0]}x{g[1]}x{g[2]} local_n0={[e['local_n0'] for e in exp]} "
      f"local_n1={[e['local_n1'] for e in exp]} alloc(complex)={[e['alloc'] for e in exp]}")
case("json rank/size", all(x["rank"] == r and x["size"] == P for r, x in enumerate(got)), "")
for ph in ["setup", "SORT", "GHOST-SOURCE", "GHOST-GRID", "FFT", "IFFT", "reduce"]:
    for key in ["bytes", "reduce_bytes"]:
        e = [x["phases"][ph][key] for x in exp]
        m = [x["phases"][ph][key] for x in got]
        if key == "reduce_bytes" and not any(e) and not any(m):
            continue
        if ph in ("FFT", "IFFT") and exp[0]["planner"] != "estimate":
            # MEASURE/PATIENT may pick a recursive transpose that relays data: the model is then
            # only a lower bound (every element bound for another rank leaves this one once)
            ratio = sum(m) / sum(e) if sum(e) else 1.0
            case(f"{ph} {key} >= model", all(a >= b for a, b in zip(m, e)),
                 f"measured {m} model {e} (x{ratio:.3f})")
            continue
        case(f"{ph} {key}", e == m, f"measured {m} expected {e}")
err = max(x["roundtrip_err"] for x in exp)
case("FFT roundtrip", err < 1e-10, f"max err {err:.1e}")
for ph in ["FFT", "IFFT", "other"]:
    fns = {}
    for x in got:
        for f, v in x["phases"][ph]["functions"].items():
            fns.setdefault(f, [0, 0])
            fns[f][0] += v["bytes"]
            fns[f][1] += v["calls"]
    print(f"  info  {ph:<6} MPI calls (all ranks): "
          + (", ".join(f"{f} {c} calls {b} B" for f, (b, c) in fns.items()) or "none"))
sys.exit(1 if fails else 0)
