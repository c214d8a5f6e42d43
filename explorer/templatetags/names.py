"""`{{ dataset.name|shown }}`: a name (of a dataset, trace, tool, key, organization, a
metadata key or value) as a page shows it, with bidirectional controls and control
characters as visible stand-ins (⟨U+202E⟩, ␀...), so that no name can reorder what the
page shows around it or in it (harden F10a). Escaped as usual afterwards; the stored name
keeps its characters. A built-in of every template (explorer/settings.py)."""

from django import template

from explorer.render.text import visible_text

register = template.Library()


@register.filter
def shown(name) -> str:
    if name is None:
        return ""
    return visible_text(str(name))
