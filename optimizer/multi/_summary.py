"""The human side of a multi-model plan: terminal lines and the report section that says why the DLA."""

from __future__ import annotations

from typing import Any


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
    for name, entry in sorted(plan["baselines"].items()):
        label = name + (f" ({'/'.join(entry['assignment'])})" if "assignment" in entry else "")
        ok = "" if entry.get("meets_request", True) else ", does not meet the request"
        lines.append(f"vs {label}: {entry['objective']:.4g} {unit}{ok}")
    dla = sorted({layer["device"] for layer in plan["layers"] if layer["device"].startswith("dla")})
    lines.append(_reason(plan, dla, value, period))
    return lines


def _reason(plan: dict[str, Any], dla: list[str], value: float, period: str) -> str:
    """The sentence that says why the plan uses the DLA (or not), in the latency model's numbers."""
    multi = plan["multi"]
    base = plan["baselines"]
    if not dla:
        return "uses no DLA: the GPU alone is best for this request"
    fastest_name = min(base, key=lambda n: (base[n]["latency_ms"], n))
    fastest = base[fastest_name]
    where = ", ".join(dla)
    if multi["gpu_budget"] is not None and fastest["gpu_busy_share"] is not None and \
            fastest["gpu_busy_share"] > multi["gpu_budget"]:
        return (f"uses {where} to keep the GPU busy at most {multi['gpu_budget']:.0%} of the {period}: the fastest "
                f"baseline ({fastest_name}, {fastest['latency_ms']:.3f} ms) keeps it busy "
                f"{fastest['gpu_busy_share']:.0%}; this plan takes {multi['period_ms']:.3f} ms "
                f"({multi['period_ms'] / fastest['latency_ms']:.2f}x) with the GPU {multi['gpu_busy_share']:.0%} busy")
    ok = {n: b for n, b in base.items() if b.get("meets_request", True)}
    if plan["objective"] == "energy" and ok:
        name = min(ok, key=lambda n: (ok[n]["objective"], n))
        return (f"uses {where} for energy: {multi['energy_mj']:.3f} mJ per frame against {ok[name]['objective']:.3f} "
                f"mJ for the best baseline ({name}); the DLA does the same work on a fraction of the GPU's power")
    if ok:
        name = min(ok, key=lambda n: (ok[n]["objective"], n))
        gain = (ok[name]["objective"] - value) / ok[name]["objective"] if ok[name]["objective"] else 0.0
        side = "the models run side by side on " if len(plan["models"]) > 1 else "runs on "
        return (f"{side}{where} and the GPU: {plan['objective']} {value:.4g} {multi['objective_unit']} against "
                f"{ok[name]['objective']:.4g} for the best baseline ({name}), {gain:.1%} better")
    return f"uses {where}: no baseline meets the request"


def multi_summary(plan: dict[str, Any], out_dir: str) -> str:
    head = (f"edgeplan optimize: {len(plan['models'])} model(s) on {plan['target']} ({plan['objective']})\n"
            f"solver {plan['solver']['status']}: {plan['solver']['objective_ms']:.4g} "
            f"{plan['solver']['objective_unit']}\n")
    return head + "".join(f"  {line}\n" for line in why_lines(plan)) + f"wrote {out_dir}/plan.json\n"


def markdown_section(plan: dict[str, Any]) -> str:
    rows = "\n".join(f"- {line}" for line in why_lines(plan))
    return f"\n## Why this plan\n\n{rows}\n"


def html_section(plan: dict[str, Any]) -> str:
    import html

    items = "".join(f"<li>{html.escape(line)}</li>" for line in why_lines(plan))
    return f'<section id="why-several"><h2>Why this plan</h2><ul>{items}</ul></section>'
