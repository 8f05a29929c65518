"""The rule colours as CSS, written from the rules table (`webapp.core.rules.RULES`): what
`/rules.css` serves before `static/app.css`, and what the exported file inlines before
`static/export.css`. The stylesheets only use the colours (`var(--rule-NAME)`, `--rule`): a
rule added to the table has its colour on every page, with no stylesheet to edit.
"""

from __future__ import annotations

import hashlib

from webapp.core.rules import RULES


def _declarations(scheme: str) -> str:
    return " ".join(f"--rule-{rule.name}: {getattr(rule.colour, scheme)};" for rule in RULES)


def rules_css() -> str:
    """Each rule's colour as a custom property in the light and the dark scheme, its class
    (`.rule-NAME` sets `--rule`), and the overview strip's columns by the rule's row (`.oc.r<n>`
    paints a column in rule n's colour, `.oc.q<n>` its upper part)."""
    lines = [
        "/* streamviz: the rule colours, written from the rules table (webapp/core/rules.py). */",
        f":root {{ {_declarations('light')} }}",
        f"@media (prefers-color-scheme: dark) {{ :root {{ {_declarations('dark')} }} }}",
        *(f".rule-{rule.name} {{ --rule: var(--rule-{rule.name}); }}" for rule in RULES),
        *(
            f".oc.r{n} {{ --a: var(--rule-{rule.name}); }} "
            f".oc.q{n} {{ --b: var(--rule-{rule.name}); }}"
            for n, rule in enumerate(RULES)
        ),
    ]
    return "\n".join(lines) + "\n"


RULES_CSS = rules_css()
"""The sheet, written once: the table does not change while the server runs."""
RULES_CSS_ETAG = '"' + hashlib.sha256(RULES_CSS.encode("utf-8")).hexdigest()[:16] + '"'
"""Its entity tag: a browser that has the sheet is answered 304."""
