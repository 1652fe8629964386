"""The vendored plotly is a partial bundle (bin/build-plotly): it draws every trace type our chart scripts name."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO / "static" / "vendor" / "plotly" / "plotly.min.js"
RECIPE = REPO / "bin" / "lib" / "plotly" / "index.js"

# Every trace type of plotly.js 4 (the modules of its lib/ folder): a ``type:`` naming one of these is a trace; the
# other values chart scripts give ``type`` (axis types, error bars, shapes) are not.
PLOTLY_TRACE_TYPES = frozenset("""
    bar barpolar box candlestick carpet choropleth choroplethmap cone contour contourcarpet densitymap funnel
    funnelarea heatmap histogram histogram2d histogram2dcontour icicle image indicator isosurface mesh3d ohlc parcats
    parcoords pie quiver sankey scatter scatter3d scattercarpet scattergeo scattergl scattermap scatterpolar
    scatterpolargl scattersmith scatterternary splom streamtube sunburst surface table treemap violin volume waterfall
""".split())


def trace_types_drawn() -> dict[str, set[str]]:
    """Each trace type a chart script under static/ (not the vendored files) names, with the scripts naming it."""
    drawn: dict[str, set[str]] = {}
    for script in (REPO / "static").rglob("*.js"):
        if "vendor" in script.relative_to(REPO / "static").parts:
            continue
        for value in re.findall(r"""\btype:\s*["'](\w+)["']""", script.read_text()):
            if value in PLOTLY_TRACE_TYPES:
                drawn.setdefault(value, set()).add(script.name)
    return drawn


def registered_in_recipe() -> set[str]:
    return {"scatter"} | set(re.findall(r"require\('plotly\.js/lib/(\w+)'\)", RECIPE.read_text())) - {"core"}


def test_the_recipe_registers_every_trace_type_a_chart_draws():
    drawn = trace_types_drawn()
    assert {"bar", "heatmap", "histogram", "scatterpolar"} <= drawn.keys()  # the scan finds what we know is there
    missing = {trace: sorted(scripts) for trace, scripts in drawn.items() if trace not in registered_in_recipe()}
    assert not missing, f"add these to {RECIPE.relative_to(REPO)} and run bin/build-plotly: {missing}"


def test_the_committed_bundle_was_built_from_the_recipe():
    header = BUNDLE.read_text()[:400]
    built = re.search(r"a partial bundle with the traces: ([\w, ]+)\.", header)
    assert built, "static/vendor/plotly/plotly.min.js was not built by bin/build-plotly"
    assert set(built.group(1).split(", ")) == registered_in_recipe(), "run bin/build-plotly after editing the recipe"
