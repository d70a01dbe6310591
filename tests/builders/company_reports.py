"""Quarterly reports whose sections never name their company or quarter (issue 37: contextual chunks).

Each report is a plain text file named "<company> <quarter> report.txt": an opening paragraph that names both,
then paragraphs that say only "the company" and "this quarter", as reports do. The questions ask about a fact of
one report by its company and quarter; every report has a paragraph on the same topic with other figures, so only
what the chunk is indexed under tells the right one from the rest. The figures are drawn from a seeded
generator: the same reports on every run.
"""

import random
from dataclasses import dataclass

COMPANIES = (
    "Northwind Traders",
    "Contoso Pharmaceuticals",
    "Fabrikam Logistics",
    "Tailspin Airways",
    "Wingtip Outfitters",
    "Litware Systems",
    "Adatum Insurance",
    "Proseware Foods",
)
QUARTERS = ("Q1 2025", "Q2 2025", "Q3 2025")

# Paragraphs between the opening and the facts asked about, so no chunk holding a fact also holds the opening.
FILLER = (
    "Management continued to focus on operating discipline. The board reviewed the capital allocation framework "
    "and confirmed that investment in digital channels remains the priority for the rest of the year. Working "
    "capital improved as inventory days fell and receivables were collected faster than in the prior period, "
    "and the supplier programme was extended to smaller partners in two further markets.",
    "The company completed the migration of its order management platform during the period. Customer "
    "satisfaction scores held steady, and the number of service tickets per thousand orders declined. Training "
    "hours per employee rose, reflecting the new onboarding curriculum introduced at the start of the year, and "
    "the internal audit of procurement controls closed without material findings.",
    "Sustainability reporting was expanded to cover scope three emissions from purchased goods. Energy use per "
    "unit of output fell, and the share of renewable electricity in owned facilities increased. The company also "
    "published its first supplier code of conduct, which now applies to every new contract, and began the "
    "annual review of its climate risk assessment with an external adviser.",
)


@dataclass(frozen=True)
class Report:
    company: str
    quarter: str
    filename: str
    text: str
    # The facts asked about, each (question, a phrase only this report's paragraph holds).
    questions: tuple[tuple[str, str], ...]


def reports(seed: int = 37) -> list[Report]:
    chance = random.Random(seed)
    made = []
    for company in COMPANIES:
        for quarter in QUARTERS:
            stores = chance.randrange(5, 60)
            total = stores + chance.randrange(100, 400)
            growth = chance.randrange(2, 19)
            revenue = chance.randrange(200, 900)
            headcount = chance.randrange(40, 400)
            stores_line = (
                f"The company opened {stores} new stores this quarter, bringing its network to {total} locations, "
                "most of them in suburban retail parks where rents fell during the period."
            )
            revenue_line = (
                f"Revenue rose {growth} percent this quarter to {revenue} million, driven by higher volumes in the "
                "core segment and a favourable mix of premium products."
            )
            hiring_line = (
                f"The company hired {headcount} people this quarter, most of them engineers and field technicians, "
                "and staff turnover remained below the industry average."
            )
            paragraphs = (
                f"{company}: report for {quarter}. This report covers the results and operations of the quarter.",
                *FILLER,
                revenue_line,
                *FILLER[:1],
                stores_line,
                *FILLER[1:2],
                hiring_line,
            )
            made.append(
                Report(
                    company=company,
                    quarter=quarter,
                    filename=f"{company} {quarter} report.txt",
                    text="\n\n".join(paragraphs) + "\n",
                    questions=(
                        (f"How many new stores did {company} open in {quarter}?", f"opened {stores} new stores"),
                        (f"How much did revenue grow at {company} in {quarter}?", f"rose {growth} percent"),
                        (f"How many people did {company} hire in {quarter}?", f"hired {headcount} people"),
                    ),
                )
            )
    return made
