"""How well the waves model ranks the plans a model variant moves (CPU only).

Reads logs of scripts/model_variant_probe.py (``as_is`` and one variant per shape) and takes the
shapes where the two plans differ and both are the model's own pick (source ``heuristic``, no
tail cut, no A transpose: the plans ``model.rank`` alone chooses). For each it recomputes both
picks as the H200 would (``model.rank`` with the runtime's settings, then with the variant's;
a pair whose recomputed tiles and splits are not the logged ones is left out) and
prints the measured ratio (variant over as is) beside the predicted one, and each plan's
predicted time beside its measured time. The summary: how many pairs, the geometric mean of
predicted / measured for the as-is plan under the runtime's constants and under the variant's,
and the range of measured and predicted ratios: a variant whose moves the model puts a few per
cent apart, measured spread far wider, is ranking below its resolution (docs/dispatch.md,
"Repacked plans on random shapes").
    python3 scripts/variant_pairs.py VARIANT LOG..."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import model_variant_probe as mvp  # noqa: E402
import probe_breakdown as pb  # noqa: E402

from gemmlab.heuristics import choice, model  # noqa: E402
from gemmlab.stages import tensor_map  # noqa: E402


def heuristic_rank(row: dict) -> list:
    """model.rank as heuristics/choice.py's step 4 calls it for the row's problem."""
    p = mvp.h200_problem(row["M"], row["N"], row["K"], row["layout"], row["batch"])
    repack = choice.should_repack(p)
    aligned = p.operands_aligned() or repack
    a_t = choice.should_transpose_a(p)
    return model.rank(p.M, p.N, p.K, p.batch, mvp.H200, aligned=aligned,
                      problem=choice.stand_in_problem(p, aligned, repack, a_t))


def logged(plan: tuple, pred) -> bool:
    """The logged plan (probe_breakdown.parse) has the prediction's tile and split."""
    bm, bn = pred.candidate.tile()
    return (plan[1], plan[2], plan[3]) == (bm, bn, pred.split_k)


def pairs(rows: list[dict], variant: str) -> list[dict]:
    """One dict per moved heuristic plan: shape, the two picks (label, split), measured us of each,
    predicted us of the as-is pick under both settings and of the variant's pick."""
    out = []
    undo = mvp.apply(((tensor_map, "available", lambda: True),))  # as on the H200
    try:
        for row in rows:
            a, v = row["runs"]["as_is"], row["runs"][variant]
            if a[2] == v[2] or any(plan[5] != "heuristic" or plan[6] or plan[7] for plan in (a[2], v[2])):
                continue
            old_best = heuristic_rank(row)[0]
            old = mvp.apply(mvp.VARIANTS[variant])
            try:
                ranked = heuristic_rank(row)
            finally:
                mvp.apply(old)
            same = [q for q in ranked if q.candidate.label == old_best.candidate.label
                    and q.split_k == old_best.split_k]
            if not same or not (logged(a[2], old_best) and logged(v[2], ranked[0])):
                continue  # the recomputed picks are not what ran (a table or rule since): left out
            out.append(dict(shape=pb.shape_str(row), as_is=(old_best.candidate.label, old_best.split_k),
                            variant=(ranked[0].candidate.label, ranked[0].split_k),
                            measured=(a[0], v[0]), as_is_pred=old_best.seconds * 1e6,
                            as_is_pred_variant=same[0].seconds * 1e6, variant_pred=ranked[0].seconds * 1e6))
    finally:
        mvp.apply(undo)
    return out


def summary(ps: list[dict]) -> dict:
    gmean = pb.gmean
    measured = [p["measured"][1] / p["measured"][0] for p in ps]
    predicted = [p["variant_pred"] / p["as_is_pred_variant"] for p in ps]
    return dict(n=len(ps), as_is_runtime=gmean([p["as_is_pred"] / p["measured"][0] for p in ps]),
                as_is_variant=gmean([p["as_is_pred_variant"] / p["measured"][0] for p in ps]),
                variant=gmean([p["variant_pred"] / p["measured"][1] for p in ps]),
                measured=(min(measured), max(measured)), predicted=(min(predicted), max(predicted)))


def main():
    variant, logs = sys.argv[1], sys.argv[2:]
    ps = pairs([row for log in logs for row in pb.parse(Path(log).read_text())], variant)
    ps.sort(key=lambda p: p["measured"][1] / p["measured"][0])
    for p in ps:
        (ta, tv) = p["measured"]
        print(f"{p['shape']:22} {p['as_is'][0]} s{p['as_is'][1]} -> {p['variant'][0]} s{p['variant'][1]}: "
              f"measured {tv / ta:.3f} ({ta:.1f} -> {tv:.1f} us), predicted {p['variant_pred'] / p['as_is_pred_variant']:.3f} "
              f"({p['as_is_pred_variant']:.1f} -> {p['variant_pred']:.1f}; as is by the runtime {p['as_is_pred']:.1f})")
    s = summary(ps)
    print(f"{s['n']} pairs; predicted / measured, the as-is plan: {s['as_is_runtime']:.3f} by the runtime's constants, "
          f"{s['as_is_variant']:.3f} by {variant}'s; its own plan {s['variant']:.3f}; variant / as is measured "
          f"{s['measured'][0]:.3f}-{s['measured'][1]:.3f}, predicted {s['predicted'][0]:.3f}-{s['predicted'][1]:.3f}")


if __name__ == "__main__":
    main()
