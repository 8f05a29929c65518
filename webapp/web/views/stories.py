"""View models of the teaching layer: an example's story on its pages, and the guided tour.

The templates reach these through two globals (`story_of`, `narration`), so the timeline and
compare pages of an example show its story without their routes knowing about stories.
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.examples import EXAMPLES, TOUR, Example, Origin
from webapp.web.http.links import Links


@dataclass(frozen=True, slots=True)
class Told:
    """One narrated step: its number, what it says, and the link that selects it."""

    step: int
    text: str
    url: str


@dataclass(frozen=True, slots=True)
class Stop:
    """An example as a stop of the tour: its title and the page it opens on."""

    key: str
    title: str
    line: str
    url: str
    opens: str
    store_url: str
    """Where "store a copy" posts."""
    origin: Origin | None = None
    """The public thread the example comes from, when it comes from one."""


@dataclass(frozen=True, slots=True)
class StoryView:
    """An example's story on one of its pages, with the tour around it."""

    key: str
    title: str
    line: str
    here: str
    start_step: int
    position: int
    count: int
    prev: Stop | None
    next: Stop | None
    timeline_url: str
    compare_url: str
    told: tuple[Told, ...]
    store_url: str
    """Where "store a copy" posts."""
    origin: Origin | None = None


def stop(key: str) -> Stop:
    """The tour stop of the example `key` (its stable URL opens where its story says)."""
    example = EXAMPLES[key]
    story = example.story
    links = Links.for_example(key, example.options)
    url = links.opening(story.opens == "compare")
    return Stop(key, example.title, story.line, url, story.opens, links.base, story.origin)


def tour() -> tuple[Stop, ...]:
    """Every example in teaching order."""
    return tuple(stop(key) for key in TOUR)


def _example(links: Links) -> Example | None:
    return EXAMPLES.get(links.example) if links.example else None


def story_of(links: Links, here: str) -> StoryView | None:
    """The story bar of an example's timeline or compare page (`here`); None for a stream."""
    example = _example(links)
    if example is None:
        return None
    story = example.story
    at = TOUR.index(example.key)
    on_compare = here == "compare"

    def url(step: int) -> str:
        return links.compare(step=step) if on_compare else links.step(step)

    return StoryView(
        key=example.key,
        title=example.title,
        line=story.line,
        here=here,
        start_step=story.start_step,
        position=at + 1,
        count=len(TOUR),
        prev=stop(TOUR[at - 1]) if at > 0 else None,
        next=stop(TOUR[at + 1]) if at + 1 < len(TOUR) else None,
        timeline_url=links.step(story.start_step),
        compare_url=links.compare(step=story.start_step),
        told=tuple(Told(step, text, url(step)) for step, text in sorted(story.steps.items())),
        store_url=links.page.base,
        origin=story.origin,
    )


def narration(links: Links, step: int) -> str | None:
    """What an example's story says at `step` (None for a stream, or a step it skips)."""
    example = _example(links)
    return example.story.at(step) if example is not None else None


SEE_IT: dict[str, tuple[str, int, bool]] = {
    "exact-index": ("clean", 3, False),
    "exact-id": ("backfill", 3, False),
    "continuation": ("continuation", 2, True),
    "drop": ("dropped", 1, True),
    "new": ("clean", 2, False),
}
"""The example, step and page (compare or not) where each rule can be seen firing."""


def see_it(rule: str) -> str | None:
    """The example page where `rule` fires, at that step; None for a rule without one."""
    if rule not in SEE_IT:
        return None
    key, step, on_compare = SEE_IT[rule]
    links = Links.for_example(key, EXAMPLES[key].options)
    return links.compare(step=step) if on_compare else links.step(step)
