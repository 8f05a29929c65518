"""View model of the Share menu: a link to this step, an embed snippet, the stream as one file,
and beside it the way into presenter mode (and out of it).

The menu sits on the stage of the timeline (and in the selected-step panel of compare), so it
follows the step: each swap brings the menu for the step it shows. Its URLs are absolute (the
server's `--public-url`, else the address the request came to), since they are pasted into a
chat, a wiki or a slide. Embedding needs the sites that may frame the view
(`--embed-origins`); the menu says which are allowed, or how to allow one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from html import escape

from fastapi import Request

from webapp.core.rules import Policy
from webapp.web.appstate import settings_of, site_root
from webapp.web.http.links import Links
from webapp.web.http.query import COMPARED

FRAMES = ((960, 540), (640, 360))
"""The embed snippet's sizes: 16:9, a slide's width and a wiki column's."""


@dataclass(frozen=True, slots=True)
class Snippet:
    """An iframe of the embedded view at one size, as HTML to paste."""

    width: int
    height: int
    html: str


@dataclass(frozen=True, slots=True)
class Share:
    """What the Share menu offers for one view at one step."""

    what: str
    """What is shared, for the menu's labels: "step 3", "compare at step 3"."""
    path: str
    """This view at this step (the links' href: a copy reads it whole from the browser)."""
    link: str
    """The same, absolute: what is pasted."""
    embed_path: str
    """Its embedded view (`/embed/...`)."""
    embed: str
    """The same, absolute."""
    snippets: tuple[Snippet, ...]
    export: str
    """The stream as one self-contained HTML file (relative: a download from this page)."""
    framers: tuple[str, ...]
    """The origins allowed to frame the embed (none: no site may)."""
    present: str
    """This view at this step in presenter mode (`present=1`), or out of it when it is in it."""
    presenting: bool
    """Whether the page is in presenter mode (the link then leaves it)."""
    replay: str = ""
    """The base URL (absolute) that sends the stream again to an application's own client."""

    @property
    def flag_example(self) -> str:
        """The option that allows a site, with one allowed already or a placeholder."""
        origins = " ".join(self.framers) if self.framers else "https://wiki.example.com"
        return f"--embed-origins '{origins}'"


def snippet(src: str, title: str, width: int, height: int) -> Snippet:
    """`<iframe>` of `src` at `width` x `height`, everything in it escaped for an attribute."""
    html = (
        f'<iframe src="{escape(src)}" title="{escape(title)}" width="{width}" '
        f'height="{height}" loading="lazy"></iframe>'
    )
    return Snippet(width, height, html)


def share(
    links: Links,
    root: str,
    step: int | None,
    title: str,
    framers: tuple[str, ...],
    *,
    on_compare: bool = False,
    sides: tuple[Policy, Policy] = COMPARED,
) -> Share:
    """The Share menu of the timeline (or compare of `sides`) at `step` (None: compare with
    no row selected), its URLs on the server reached at `root` (`https://host`, no slash)."""
    page = links.page
    toggled = replace(page, present=not links.present)
    if on_compare:
        link = page.compare(*sides, step=step)
        embed = page.compare(*sides, step=step, framed=True)
        present = toggled.compare(*sides, step=step)
        what = "compare" if step is None else f"compare at step {step}"
    else:
        at = step or 0
        link, embed, what = page.step(at), page.embedded.step(at), f"step {at}"
        present = toggled.step(at)
    label = f"streamviz: {title}, {what}"
    absolute = root.rstrip("/")
    snippets = tuple(snippet(absolute + embed, label, w, h) for w, h in FRAMES)
    return Share(
        what=what,
        path=link,
        link=absolute + link,
        embed_path=embed,
        embed=absolute + embed,
        snippets=snippets,
        export=page.export,
        framers=framers,
        present=present,
        presenting=links.present,
        replay=absolute + page.replay,
    )


def share_menu(
    request: Request,
    links: Links,
    step: int | None,
    title: str,
    sides: tuple[Policy, Policy] | None = None,
) -> Share:
    """The Share menu of a page at `step` (of compare, when it compares `sides`), on the
    server's public URL (else the address the request came to) for the sites it lets frame."""
    framers = settings_of(request).embed_origins
    root = site_root(request)
    if sides is None:
        return share(links, root, step, title, framers)
    return share(links, root, step, title, framers, on_compare=True, sides=sides)
