"""The beam search tree as SVG that still reads at 20+ steps (as NMTVis's navigable beam tree; Munz et al., 2021,
"Visual-Interactive Neural Machine Translation").

Nodes are laid out by step (x) and rank (y: best on top), so every label owns one cell of the grid and no two
labels can overlap; a long piece is shortened to fit its cell and shown whole on hover, with its probability and
the hypothesis's log-probability. The winning path is drawn strongly; finished (</s>), length-stopped and pruned
nodes each have their own shape and colour; a forced step's node (a piece given to the decoder rather than chosen,
`transformer.decoding.prefix`) wears a violet ring and a violet label. Clicking a node marks its path (in the app:
opens that hypothesis at that step).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from transformer.bidi import is_rtl
from transformer.charts.theme import BEST, CATEGORIES, FORCED, MUTED, NORMAL, PICKED
from transformer.decoding.search import SearchStep
from transformer.explain.views.svg import BASE_CSS, HOVER_CHARS, View, anchored, esc, fit, new_id, shorten

COL, ROW, RADIUS = 92, 24, 5  # px: a step's column, a rank's row, a node
FONT_PX = NORMAL.view  # the labels' font: the smallest text of the views
LEFT, TOP = 34, 44  # px: room for the root <s> and the step numbers
BLUE, ORANGE, GREEN = CATEGORIES[:3]
STYLES = {  # status -> (colour, edge dash, what the legend says)
    "live": (BLUE, "", "kept in the beam"),
    "finished": (GREEN, "", "finished with </s>"),
    "stopped": (ORANGE, "5,3", "stopped at the length limit"),
    "pruned": (MUTED, "2,3", "pruned: fell out of the beam"),
}
WIN = BEST  # the best hypothesis's path
CSS = BASE_CSS + f"""
.bt .node{{cursor:pointer}}.bt .node text{{font-size:{FONT_PX}px;paint-order:stroke;stroke:white;stroke-width:3px}}
.bt .node.win text{{font-weight:700}}.bt .node.pruned text{{fill:{MUTED}}}.bt .node.forced text{{fill:{FORCED}}}
.bt .node.picked text{{fill:{PICKED}}}
.bt .edge.picked{{stroke:{PICKED} !important;stroke-opacity:1}}.bt .info{{min-height:1.4em}}
.bt svg.fit{{width:100%;height:auto}}.bt .wide{{overflow-x:auto}}"""
TREE_JS = """function(root,onpick){const svg=root.querySelector('svg.bt');const info=root.querySelector('.info');
svg.querySelectorAll('g.node').forEach(n=>n.addEventListener('click',()=>{
svg.querySelectorAll('.picked').forEach(e=>e.classList.remove('picked'));let at=n;
while(at){at.classList.add('picked');const e=svg.querySelector('line.edge[data-to="'+at.dataset.id+'"]');
if(e)e.classList.add('picked');at=at.dataset.up?svg.querySelector('g.node[data-id="'+at.dataset.up+'"]'):null;}
if(info)info.textContent=n.dataset.summary;if(onpick)onpick(+n.dataset.step,+n.dataset.rank);}));
const fit=root.querySelector('button.fit');if(fit)fit.onclick=()=>{const on=svg.classList.toggle('fit');
fit.textContent=on?'Actual size':'Whole tree';};}"""


def node_prefix(steps: Sequence[SearchStep], step: int, rank: int) -> list[int]:
    """The output tokens (after <s>) of the hypothesis that node `rank` of `step` (0-based) ends."""
    node = steps[step].nodes[rank]
    return list(steps[step].live[node.parent].prefix[1:]) + [node.token]


def winning_nodes(steps: Sequence[SearchStep], best: Sequence[int]) -> set[tuple[int, int]]:
    """(step, rank) of the nodes on best's path: from <s>, the node extending the live slot by best's next token."""
    path, slot = set(), 0
    for t, step in enumerate(steps):
        if t >= len(best):
            break
        rank = next((r for r, n in enumerate(step.nodes) if n.parent == slot and n.token == best[t]), None)
        if rank is None:
            break
        path.add((t, rank))
        if step.nodes[rank].status != "live":
            break
        slot = step.nodes[rank].slot
    return path


def _fit(label: str) -> str:
    return fit(label, COL - 2 * RADIUS - 10, FONT_PX)


def _marker(status: str, x: float, y: float, win: bool) -> str:
    colour = WIN if win else STYLES.get(status, STYLES["live"])[0]
    r = RADIUS + (1 if win else 0)
    if status == "finished":
        return (f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{colour}"/>'
                f'<rect x="{x - r - 2:.1f}" y="{y - r - 2:.1f}" width="{2 * r + 4}" height="{2 * r + 4}" fill="none" '
                f'stroke="{colour}"/>')
    if status == "stopped":
        s = r + 1
        return f'<path d="M{x:.1f},{y - s:.1f} l{s},{s} l{-s},{s} l{-s},{-s} z" fill="{colour}"/>'
    if status == "pruned":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r - 1}" fill="white" stroke="{colour}" stroke-width="1.5"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"/>'


def beam_tree_svg(steps: Sequence[SearchStep], pieces: Callable[[list[int]], list[str]],
                  best: Sequence[int] | None = None, forced: int = 0) -> tuple[str, int, int]:
    """The tree's SVG, its width and height. steps: a search's recorded steps (`DecodingSession.history`);
    pieces: token ids -> their pieces (`tokenizer.target_pieces`); best: the output whose path is drawn strongly;
    forced: how many first steps emitted a forced prefix (`DecodingSession.prefix`), whose nodes are marked."""
    win = winning_nodes(steps, best) if best else set()
    n_rows = max((len(s.nodes) for s in steps), default=1)
    width, height = int(LEFT + (len(steps) + 1) * COL), int(TOP + n_rows * ROW + 8)
    edges, nodes = [], [f'<g class="node live" data-id="root" data-step="-1" data-rank="0" data-summary="&lt;s&gt;">'
                        f'{_marker("live", LEFT, TOP, bool(win))}<text x="{LEFT + 8}" y="{TOP}" '
                        f'dominant-baseline="middle">&lt;s&gt;</text><title>&lt;s&gt;: the start</title></g>']
    slot_at = {0: ("root", LEFT, float(TOP))}  # live slot -> (node id, x, y) of the node that fed it
    heads = []
    for t, step in enumerate(steps):
        x = LEFT + (t + 1) * COL
        heads.append(f'<text x="{x}" y="14" text-anchor="middle" class="note">{t + 1}</text>')
        next_slot = {}
        for rank, node in enumerate(step.nodes):
            y = TOP + rank * ROW
            up, px, py = slot_at.get(node.parent, ("root", LEFT, float(TOP)))
            on_path = (t, rank) in win
            colour, dash, _ = STYLES.get(node.status, STYLES["live"])
            stroke = WIN if on_path else colour
            edges.append(f'<line class="edge" data-to="{t}-{rank}" x1="{px:.1f}" y1="{py:.1f}" x2="{x - RADIUS:.1f}" '
                         f'y2="{y:.1f}" stroke="{stroke}" stroke-width="{3 if on_path else 1.2}" '
                         f'stroke-opacity="{1 if on_path else 0.7}"' + (f' stroke-dasharray="{dash}"' if dash else "")
                         + "/>")
            piece = pieces([node.token])[0]
            prefix = " ".join(shorten(p) for p in pieces(node_prefix(steps, t, rank)))
            summary = (f"step {t + 1}, rank {rank}: {shorten(piece)} ({node.status}); P = {math.exp(node.log_prob):.3f}"
                       f", log-probability {node.score:.3f}; hypothesis: {shorten(prefix, HOVER_CHARS)}")
            given = t < forced
            title = (f"{piece}\nstep {t + 1}, rank {rank}: {STYLES.get(node.status, ('', '', node.status))[2]}"
                     f"{' (forced: given, not chosen)' if given else ''}\n"
                     f"P({piece} | prefix) = {math.exp(node.log_prob):.3f}\nlog-probability of the hypothesis = "
                     f"{node.score:.3f}\n{shorten(prefix, 120)}")
            classes = f"node {node.status}" + (" win" if on_path else "") + (" forced" if given else "")
            nodes.append(f'<g class="{classes}" data-id="{t}-{rank}" data-up="{up}" data-step="{t}" '
                         f'data-rank="{rank}" data-status="{node.status}" data-summary="{esc(summary)}">'
                         + (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{RADIUS + 4}" fill="none" stroke="{FORCED}" '
                            'stroke-width="2"/>' if given else "")
                         + f"{_marker(node.status, x, y, on_path)}"
                         f'<text class="label" x="{x + RADIUS + 4}" y="{y}" {anchored("left", is_rtl(piece))} '
                         'dominant-baseline="middle">'
                         f"{esc(_fit(piece))}</text><title>{esc(title)}</title></g>")
            if node.status == "live":
                next_slot[node.slot] = (f"{t}-{rank}", x, float(y))
        slot_at = next_slot
    svg = (f'<svg class="bt" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}"><text x="4" y="14" class="note">step</text>{"".join(heads)}'
           f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(nodes)}</g></svg>')
    return svg, width, height


def legend(forced: bool = False) -> str:
    """The tree's key (forced: with the forced steps' mark)."""
    items = [("live", "circle"), ("finished", "square"), ("stopped", "diamond"), ("pruned", "ring")]
    marks = {"live": "●", "finished": "■", "stopped": "◆", "pruned": "○"}
    parts = [f'<span style="color:{STYLES[s][0]}">{marks[s]}</span> {esc(STYLES[s][2])}' for s, _ in items]
    parts.append(f'<span style="color:{WIN};font-weight:700">━</span> the best hypothesis')
    if forced:
        parts.append(f'<span style="color:{FORCED}">◎</span> forced: given, not chosen')
    return ('<div class="note"><button class="fit" type="button" title="Shrink the tree to the width of the page: '
            'every step and the best path at once">Whole tree</button>' + " &nbsp; ".join(parts)
            + ". Hover a node for its numbers, click it for its path.</div>")


def beam_tree_from(steps: Sequence[SearchStep], pieces: Callable[[list[int]], list[str]],
                   best: Sequence[int] | None = None, *, title: str = "", forced: int = 0) -> View:
    """The beam tree as a view: legend, SVG (scrolls sideways when long) and a line naming the clicked node;
    forced: the steps of a forced prefix, marked."""
    svg, width, height = beam_tree_svg(steps, pieces, best, forced)
    root = new_id("bt")
    heading = f"<div><b>{esc(title)}</b></div>" if title else ""
    body = (f'<style>{CSS}</style><div class="tv bt" id="{root}">{heading}{legend(forced > 0)}'
            f'<div class="wide">{svg}</div><div class="info note"></div></div>')
    script = f"<script>({TREE_JS})(document.getElementById('{root}'));</script>"
    return View("beam tree", body + script, height + 80, width, FONT_PX)
