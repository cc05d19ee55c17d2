"""Our panel factory: the only module that imports grafanalib.

Dashboards are built from these few house functions, so every panel gets the same datasource,
units, legend and layout conventions, and a later move to Grafana's foundation SDK touches this file
only. ``dashboard()`` returns plain JSON-ready dicts (what the generator writes).

Conventions enforced here:
- every panel and variable queries ``${datasource}`` (a datasource variable; ``__inputs`` lets the
  import UI bind it, file provisioning falls back to the default Prometheus);
- every panel has a unit (a required argument);
- panel ids follow the order panels are given, grid positions follow widths: stable output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from grafanalib import core as g
from grafanalib._gen import DashboardEncoder

DS = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False
    table: bool = False  # format=table (one row per series, labels as columns)
    heatmap: bool = False  # format=heatmap (le buckets)


@dataclass
class Panel:
    """A panel before layout: the grafanalib object and its width/height in grid units."""

    obj: object
    width: int
    height: int
    queries: list[Query] = field(default_factory=list)
    unit: str = ""
    is_row: bool = False


def _targets(queries: list[Query]) -> list[g.Target]:
    out = []
    for i, q in enumerate(queries):
        fmt = "table" if q.table else "heatmap" if q.heatmap else "time_series"
        out.append(g.Target(expr=q.expr, legendFormat=q.legend, refId=chr(ord("A") + i), instant=q.instant,
                            format=fmt, datasource=DS, intervalFactor=1, step=None))
    return out


def _links(links: list[tuple[str, str]]) -> list[dict]:
    """Panel links, with every field of Grafana's DashboardLink type (a link of type "link")."""
    return [{"asDropdown": False, "icon": "external link", "includeVars": False, "keepTime": False, "tags": [],
             "targetBlank": False, "title": title, "tooltip": "", "type": "link", "url": url}
            for title, url in links]


def _data_links(links: list[tuple[str, str]]) -> list[dict]:
    """Data links of a table field (Grafana's DataLink: title and url)."""
    return [{"title": title, "url": url} for title, url in links]


# Keys grafanalib writes that Grafana's dashboard schema (@grafana/schema) has no place for; Grafana
# ignores them, and tests/unit/mixin/test_dashboards_grafana_schema.py type-checks the result without them.
_LEGACY_PANEL_KEYS = ("editable", "error", "height", "span", "minSpan")
_LEGACY_DASHBOARD_KEYS = ("hideControls", "rows", "sharedCrosshair", "gnetId", "style")
_LEGACY_VARIABLE_KEYS = ("auto", "auto_count", "auto_min", "tagValuesQuery", "tagsQuery", "useTags", "tags")
_LEGACY_TABLE_KEYS = ("color", "columns", "fontSize", "pageSize", "scroll", "showHeader", "sort", "styles")


def _schema_clean(data: dict) -> None:
    """Drop grafanalib's legacy fields and fill what the schema requires (in place)."""
    data.get("timepicker", {}).pop("time_options", None)
    for key in _LEGACY_DASHBOARD_KEYS:
        data.pop(key, None)
    for var in data.get("templating", {}).get("list", []):
        if var.get("type") != "interval":
            for key in _LEGACY_VARIABLE_KEYS:
                var.pop(key, None)
        for option in var.get("options", []) + [var.get("current") or {}]:
            option.pop("tags", None)
    for panel in data.get("panels", []):
        for key in _LEGACY_PANEL_KEYS:
            panel.pop(key, None)
        if panel.get("type") == "table":  # the angular table's options; the table panel uses fieldConfig
            for key in _LEGACY_TABLE_KEYS:
                panel.pop(key, None)
            if not panel.get("mappings"):  # value mappings live in fieldConfig.defaults
                panel.pop("mappings", None)
        if "fieldConfig" in panel:
            panel["fieldConfig"].setdefault("overrides", [])


def timeseries(title: str, queries: list[Query], unit: str, *, description: str = "", width: int = 12,
               height: int = 8, stacked: bool = False, max_one: bool = False, thresholds: list[float] = (),
               links: list[tuple[str, str]] = ()) -> Panel:
    if not unit:
        raise ValueError(f"panel {title!r} needs a unit")
    steps = [{"color": "green", "value": None}] + [{"color": c, "value": v}
                                                     for c, v in zip(("orange", "red"), thresholds)]
    obj = g.TimeSeries(
        title=title, description=description, dataSource=DS, targets=_targets(queries), unit=unit,
        legendDisplayMode="table", legendPlacement="right", legendCalcs=["max", "lastNotNull"],
        tooltipMode="multi", tooltipSort="desc", fillOpacity=10 if stacked else 0,
        stacking={"mode": "normal", "group": "A"} if stacked else {},
        thresholdsStyleMode="dashed" if thresholds else "off",
        thresholds=steps, valueMin=0 if max_one else None, valueMax=1 if max_one else None,
        links=_links(links))
    return Panel(obj, width, height, list(queries), unit)


def table(title: str, queries: list[Query], unit: str, *, description: str = "", width: int = 12,
          height: int = 8, hide: list[str] = (), links: list[tuple[str, str]] = (),
          link_field: str | None = None, transformations: list[dict] | None = None) -> Panel:
    """An instant table, one row per series; ``links`` become data links on ``link_field``."""
    if not unit:
        raise ValueError(f"panel {title!r} needs a unit")
    queries = [Query(q.expr, q.legend, instant=True, table=True) for q in queries]
    excluded = {name: True for name in ("Time", "__name__", "job", "instance", *hide)}
    transforms = [{"id": "organize", "options": {"excludeByName": excluded}}]
    transforms += transformations or []
    overrides = [{"matcher": {"id": "byName", "options": "Value"},
                  "properties": [{"id": "unit", "value": unit}]}]
    if link_field and links:
        overrides.append({"matcher": {"id": "byName", "options": link_field},
                          "properties": [{"id": "links", "value": _data_links(links)}]})
    obj = g.Table(title=title, description=description, dataSource=DS, targets=_targets(queries), unit=unit,
                  transformations=transforms, overrides=overrides, thresholds=[{"color": "green", "value": None}],
                  sortBy=[g.TableSortByField(displayName="Value", desc=True)], filterable=True)
    return Panel(obj, width, height, list(queries), unit)


def stat(title: str, queries: list[Query], unit: str, *, description: str = "", width: int = 4, height: int = 4,
         thresholds: list[float] = (), reduce: str = "lastNotNull") -> Panel:
    if not unit:
        raise ValueError(f"panel {title!r} needs a unit")
    steps = [{"color": "green", "value": None}] + [{"color": c, "value": v}
                                                     for c, v in zip(("orange", "red"), thresholds)]
    obj = g.Stat(title=title, description=description, dataSource=DS, targets=_targets(queries), format=unit,
                 reduceCalc=reduce, graphMode="area", colorMode="background" if thresholds else "value",
                 thresholds=steps)
    return Panel(obj, width, height, list(queries), unit)


def heatmap(title: str, query: Query, unit: str, *, description: str = "", width: int = 12, height: int = 8,
            buckets: bool = True) -> Panel:
    """A heatmap of a Prometheus histogram (``buckets``: query is ``sum by (le) (rate(..._bucket))``) or of
    many series bucketed by Grafana."""
    if not unit:
        raise ValueError(f"panel {title!r} needs a unit")
    q = Query(query.expr, query.legend or ("{{le}}" if buckets else ""), heatmap=buckets)
    obj = g.Heatmap(title=title, description=description, dataSource=DS, targets=_targets([q]),
                    dataFormat="tsbuckets" if buckets else "timeseries", hideZeroBuckets=True,
                    yAxis=g.YAxis(format=unit, decimals=None), yBucketBound="upper" if buckets else "auto",
                    color=g.HeatmapColor(mode="spectrum", colorScheme="interpolateOranges"),
                    # empty options: Grafana >= 9 migrates this legacy heatmap to its new panel on load
                    options={})
    return Panel(obj, width, height, [q], unit)


def row(title: str) -> Panel:
    return Panel(g.RowPanel(title=title), GRID_WIDTH, 1, [], "", is_row=True)


def query_variable(name: str, label: str, query: str, *, multi: bool = True, include_all: bool = True,
                   default: str | None = None, all_value: str | None = ".*", regex: str | None = None,
                   hidden: bool = False) -> g.Template:
    """A query variable. ``all_value=None`` makes "All" stand for every option (Grafana expands it to
    the options' values) instead of a catch-all regex; ``regex`` extracts value/text from each result;
    ``hidden`` keeps it off the variable bar (a variable other queries read)."""
    return g.Template(name=name, label=label, query=query, dataSource=DS, multi=multi, includeAll=include_all,
                      allValue=all_value if include_all else None,
                      default=default or ("$__all" if include_all else None), regex=regex,
                      hide=g.HIDE_VARIABLE if hidden else g.SHOW, refresh=2, sort=1)


def _datasource_variable() -> g.Template:
    return g.Template(name="datasource", label="Data source", query="prometheus", type="datasource",
                      default="${DS_PROMETHEUS}", includeAll=False, multi=False)


def _layout(panels: list[Panel]) -> list:
    """Place panels left to right, wrapping at the grid width; ids in order from 1."""
    x = y = row_height = 0
    placed = []
    for pid, p in enumerate(panels, start=1):
        if p.is_row or x + p.width > GRID_WIDTH:
            x, y, row_height = 0, y + row_height, 0
        p.obj.id = pid
        if not p.is_row:
            p.obj.maxDataPoints = None  # grafanalib's 100 would coarsen every graph; let Grafana use the width
        p.obj.gridPos = g.GridPos(h=p.height, w=p.width, x=x, y=y)
        placed.append(p.obj)
        if p.is_row:
            y += 1
        else:
            x += p.width
            row_height = max(row_height, p.height)
    return placed


def dashboard(uid: str, title: str, description: str, panels: list[Panel], variables: list[g.Template],
              *, tags: list[str], refresh: str, time_from: str = "now-6h") -> dict:
    board = g.Dashboard(
        title=title, uid=uid, description=description, tags=list(tags), refresh=refresh, timezone="utc",
        editable=True, sharedCrosshair=True,
        time=g.Time(time_from, "now"),
        templating=g.Templating(list=[_datasource_variable(), *variables]),
        inputs=[g.DataSourceInput(name="DS_PROMETHEUS", label="Prometheus", pluginId="prometheus",
                                  pluginName="Prometheus", description="Prometheus scraping fabric-exporter")],
        links=[g.DashboardLink(title="Fabric dashboards", type="dashboards", tags=list(tags), asDropdown=True,
                               includeVars=True, keepTime=True)],
        panels=_layout(panels),
    )
    data = json.loads(json.dumps(board.to_json_data(), cls=DashboardEncoder, sort_keys=True))
    for var in data["templating"]["list"]:
        if var.get("current", {}).get("value") == "$__all":  # what Grafana itself saves for "All"
            var["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    data["__requires"] = [
        {"type": "grafana", "id": "grafana", "name": "Grafana", "version": "9.0.0"},
        {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
    ]
    data.pop("id", None)  # Grafana assigns ids; a fixed uid is what links and provisioning use
    _schema_clean(data)
    return data


def queries_of(board: dict) -> list[tuple[str, str]]:
    """(panel title, expr) of every panel target and every query variable of a built dashboard."""
    out = []
    for panel in board.get("panels", []):
        for t in panel.get("targets", []):
            out.append((panel.get("title", ""), t["expr"]))
    for var in board.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            out.append((f"variable {var['name']}", var["query"]))
    return out
