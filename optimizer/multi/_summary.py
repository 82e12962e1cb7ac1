"""The human side of a multi-model plan: terminal lines and the report section that says why the DLA."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optimizer.multi._build import MultiPlanned


def _engines_of(plan: dict[str, Any], k: int) -> str:
    busy = plan["models"][k]["busy_ms"]
    return ", ".join(f"{e} {ms:.3f} ms" for e, ms in sorted(busy.items()) if ms > 0)


def why_lines(plan: dict[str, Any]) -> list[str]:
    """Plain sentences: what the plan gains over each baseline, where the DLA is used and why, contention
    and energy in numbers."""
    multi = plan["multi"]
    unit = multi["objective_unit"]
    lines = []
    value = plan["solver"]["objective_ms"]
    for k, model in enumerate(plan["models"]):
        lines.append(f"{model['name']}: {model['latency_ms']:.3f} ms ({_engines_of(plan, k)})"
                     + (f", +{model['contention_ms']:.3f} ms from contention" if model["contention_ms"] else ""))
    period = "cycle" if multi["period"].startswith("cycle") else "makespan"
    lines.append(f"{period} {multi['period_ms']:.3f} ms, of which +{multi['contention_ms']:.3f} ms from shared-DRAM "
                 f"contention (PCCS; co-runner pressure " + ", ".join(f"{e} {p}%" for e, p in
                                                                      sorted(multi["contention"]["pressure_pct"].items()))
                 + ")" if multi["contention"]["on"] else f"{period} {multi['period_ms']:.3f} ms (no contention "
                 "counted: the engines never run at once)")
    if multi["energy_mj"] is not None:
        lines.append(f"energy {multi['energy_mj']:.3f} mJ per frame; GPU busy {multi['gpu_busy_share']:.0%} of the "
                     f"{period}" + (f" (budget {multi['gpu_budget']:.0%})" if multi["gpu_budget"] is not None else ""))
    dla = sorted({layer["device"] for layer in plan["layers"] if layer["device"].startswith("dla")})
    for name, entry in sorted(plan["baselines"].items()):
        label = name + (f" ({'/'.join(entry['assignment'])})" if "assignment" in entry else "")
        ok = "" if entry.get("meets_request", True) else ", does not meet the request"
        lines.append(f"vs {label}: {entry['objective']:.4g} {unit}{ok}")
    if dla:
        best = min((e["objective"] for e in plan["baselines"].values() if e.get("meets_request", True)),
                   default=None)
        gain = f"{best / value:.2f}x better {plan['objective']} than the best baseline" if best and value else \
            "meets a request no baseline meets"
        lines.append(f"uses {', '.join(dla)}: {gain} (every figure above is the same latency model's)")
    else:
        lines.append("uses no DLA: the GPU alone is best for this request")
    return lines


def multi_summary(planned: MultiPlanned, out_dir: str) -> str:
    plan = planned.planned.plan
    head = (f"edgeplan optimize: {len(plan['models'])} model(s) on {plan['target']} ({plan['objective']})\n"
            f"solver {plan['solver']['status']}: {plan['solver']['objective_ms']:.4g} "
            f"{plan['solver']['objective_unit']}\n")
    return head + "".join(f"  {line}\n" for line in why_lines(plan)) + f"wrote {out_dir}/plan.json\n"


def markdown_section(plan: dict[str, Any]) -> str:
    rows = "\n".join(f"- {line}" for line in why_lines(plan))
    return f"\n## Several models: why this plan\n\n{rows}\n"
