"""A UiPath coded agent: rule-based triage of a support ticket (no model, so its evaluation is deterministic)."""

from dataclasses import dataclass

KEYWORDS = {
    "billing": ("invoice", "refund", "charge"),
    "technical": ("error", "crash", "bug"),
}


@dataclass
class TicketIn:
    text: str


@dataclass
class TicketOut:
    category: str
    urgent: bool


def main(input: TicketIn) -> TicketOut:
    text = input.text.lower()
    category = next((name for name, words in KEYWORDS.items() if any(word in text for word in words)), "other")
    return TicketOut(category=category, urgent="asap" in text or "urgent" in text)
