"""A small demo corpus: one realistic business document for every accepted upload format.

A demo of upload, extraction and search needs realistic documents of every format, with enough
coherent text to search; shipping binaries in the repository would hide their content from review.
So they are generated here, on demand: PDF with fpdf2 (a development dependency, imported lazily),
Word, Excel and PowerPoint with python-docx, openpyxl and python-pptx, and the text formats as text.

Every file is about one fictional company, Northwind Robotics, so a query finds facts across formats
(ERR-4021 is in the incident report and the meeting notes; the R2 robot in the roadmap, the budget
and the notes). Generation is deterministic: fixed document dates, fixed zip entry times, no clocks.
"""

import csv
import io
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from shared.local import scan_corpus

COMPANY = "Northwind Robotics"
# Every date a writer would otherwise take from the clock.
_FIXED_TIME = datetime(2026, 9, 1, 9, 0, 0, tzinfo=UTC)
_ZIP_TIME = (2026, 9, 1, 9, 0, 0)


# The stand-up recording: spoken by espeak-ng (Debian's, `make speech`), so the demo transcribes what it says.
STANDUP_SENTENCES = (
    "Welcome to the weekly stand up meeting of Northwind Robotics.",
    "Falcon 42 builds the charging docks for the R2 robot.",
    "The launch review moved to Thursday afternoon.",
)


def write_demo_recording(directory: Path) -> Path | str:
    """A short recording of the stand-up, spoken by espeak-ng and encoded as MP3 by PyAV: its path, or why it could
    not be made here (the demo says so rather than pretending)."""
    from shared.local.speech_corpus import encoded, espeak_missing, spoken_recording

    missing = espeak_missing()
    if missing is not None:
        return missing
    talk = spoken_recording(STANDUP_SENTENCES, lead_seconds=1.0, gap_seconds=1.5)
    recording = encoded(talk, "mp3", name="standup-recording")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / recording.filename
    path.write_bytes(recording.content)
    return path


def write_demo_corpus(directory: Path) -> list[Path]:
    """Write the demo documents into `directory` (created if absent); their paths, in a stable order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for name, render in _DOCUMENTS:
        path = directory / name
        path.write_bytes(render())
        paths.append(path)
    return paths


# --- PDF -------------------------------------------------------------------------------------------

_INCIDENT_PAGE_ONE = (
    (
        "Summary",
        "On 14 March 2026 the Northwind Robotics payment gateway was unavailable for 47 minutes. "
        "Between 09:12 and 09:59 UTC customers of the online store could browse the catalogue and fill "
        "their baskets, but could not complete checkout: every call from the storefront to the payments "
        "service failed during the TLS handshake. The incident was declared as ERR-4021 at severity 1 "
        "and closed the same morning once a renewed certificate was installed.",
    ),
    (
        "Customer impact",
        "About 1,900 checkout attempts failed during the outage, most of them for spare parts and "
        "service contracts for the R1 warehouse robot. Roughly 60 percent of the affected customers "
        "retried successfully later that day. Support received 214 tickets and 38 phone calls. No card "
        "data was exposed and no payment was taken twice: the gateway refused the connections before "
        "any payment request was sent.",
    ),
    (
        "Root cause",
        "The TLS certificate on the payments load balancer expired at 09:12 UTC. It had been issued "
        "manually a year earlier, outside the automated renewal that covers every other public endpoint, "
        "and the only reminder went to the mailbox of an engineer who had since changed teams. Monitoring "
        "checked that the load balancer answered, not that its certificate was valid, so the first alert "
        "came from the error rate on the storefront rather than from the certificate itself.",
    ),
)
_INCIDENT_TIMELINE = (
    ("Time (UTC)", "Event", "Team"),
    ("09:12", "Payments certificate expires", "-"),
    ("09:15", "Checkout error rate alarm", "SRE"),
    ("09:21", "Incident ERR-4021 declared", "SRE"),
    ("09:34", "Expired certificate found", "Payments"),
    ("09:52", "Renewed certificate deployed", "Payments"),
    ("09:59", "Checkout traffic recovered", "SRE"),
)
_INCIDENT_PAGE_TWO = (
    (
        "Remediation",
        "The payments load balancer now uses the same automated certificate renewal as the rest of our "
        "public endpoints, renewing 30 days before expiry without anyone having to remember it. An expiry "
        "alarm fires 30 days ahead for every certificate we serve, whoever issued it, and pages the on-call "
        "engineer rather than a personal mailbox. A synthetic checkout runs every minute from two regions, "
        "so a failed handshake is caught within minutes even when the load balancer is otherwise healthy.",
    ),
    (
        "Lessons learned",
        "Manual exceptions to automation are where outages hide: the inventory of certificates now lists "
        "every endpoint and who renews it. Alerts must go to a rota, never to a person. Health checks "
        "should test what customers do, not only that a port is open. Follow-up actions are tracked in "
        "the R2 launch readiness review, because the R2 pre-order shop depends on the same gateway.",
    ),
)


def _incident_report_pdf() -> bytes:
    from fpdf import FPDF
    from fpdf.fonts import FontFace

    pdf = FPDF(format="A4")
    pdf.set_creation_date(_FIXED_TIME)
    pdf.set_title("Incident report ERR-4021")
    pdf.set_author(COMPANY)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_margins(20, 20, 20)

    def heading(text: str, size: int) -> None:
        pdf.set_font("Helvetica", style="B", size=size)
        pdf.cell(text=text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)

    def paragraph(text: str) -> None:
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(w=0, h=6, text=text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)

    pdf.add_page()
    heading("Incident report ERR-4021", 20)
    paragraph(f"{COMPANY} - postmortem of the payment gateway outage of 14 March 2026. Blameless review.")
    for title, text in _INCIDENT_PAGE_ONE:
        heading(title, 14)
        paragraph(text)

    pdf.add_page()
    heading("Timeline, 14 March 2026", 14)
    pdf.set_font("Helvetica", size=10)
    with pdf.table(
        col_widths=(30, 100, 40), text_align="LEFT", line_height=7, headings_style=FontFace(emphasis="BOLD")
    ) as table:
        for row in _INCIDENT_TIMELINE:
            table.row(row)
    pdf.ln(6)
    for title, text in _INCIDENT_PAGE_TWO:
        heading(title, 14)
        paragraph(text)
    return bytes(pdf.output())


# --- DOCX ------------------------------------------------------------------------------------------

_LEAVE_DAYS = (
    ("Region", "Annual leave days"),
    ("Germany", "30"),
    ("France", "25"),
    ("United Kingdom", "28"),
    ("United States", "20"),
    ("Japan", "20"),
)


def _employee_handbook_docx() -> bytes:
    from docx import Document

    document = Document()
    properties = document.core_properties
    properties.title, properties.author = "Employee handbook", COMPANY
    properties.created = properties.modified = _FIXED_TIME.replace(tzinfo=None)
    properties.last_printed = _FIXED_TIME.replace(tzinfo=None)
    properties.revision = 1

    document.add_heading(f"{COMPANY} employee handbook", level=1)
    document.add_paragraph(
        "This handbook describes how we work together. It applies to every employee of Northwind Robotics "
        "in every country; where local law gives you more, local law wins. Questions go to People Operations."
    )
    document.add_heading("Remote work", level=1)
    document.add_paragraph(
        "Most roles at Northwind Robotics can be done from home for up to three days a week. Engineering "
        "teams that work on the R2 warehouse robot meet in the lab on Tuesdays and Thursdays, because "
        "hardware cannot be tested over a video call. Agree your pattern with your manager and put it "
        "in the team calendar."
    )
    document.add_heading("Equipment and security", level=2)
    for item in (
        "Use the company laptop for company work, and keep its disk encryption switched on.",
        "Connect through the company VPN when you work from anywhere other than an office.",
        "Claim up to 400 EUR once every three years for a desk chair or monitor at home.",
        "Never leave prototype hardware in a car or take it abroad without a shipping permit.",
    ):
        document.add_paragraph(item, style="List Bullet")
    document.add_heading("Parental leave", level=1)
    document.add_paragraph(
        "Every parent, whatever their gender and however their child joins the family, receives 20 weeks "
        "of parental leave on full pay, to be taken within two years of the birth or adoption. You can "
        "take it in up to three blocks. Tell People Operations at least eight weeks before your first "
        "block starts, and we will plan a handover with your team."
    )
    document.add_heading("Returning to work", level=2)
    document.add_paragraph(
        "For the first month back you may work 80 percent of your hours on full pay. Your manager will "
        "arrange a catch-up on what changed while you were away, including any new safety procedures."
    )
    document.add_heading("Annual leave", level=1)
    document.add_paragraph(
        "Annual leave depends on the country of your employment contract. Public holidays come on top of "
        "the days below. Unused days carry over until 31 March of the following year."
    )
    table = document.add_table(rows=len(_LEAVE_DAYS), cols=2)
    table.style = "Table Grid"
    for row, values in zip(table.rows, _LEAVE_DAYS, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return _fixed_zip_times(buffer.getvalue())


# --- XLSX ------------------------------------------------------------------------------------------

_BUDGET = (
    ("Department", "Q3-2026 spend (EUR)", "Headcount", "Owner"),
    ("Engineering", 1_840_000, 64, "Priya Raman"),
    ("Manufacturing", 2_310_000, 88, "Tomasz Wojcik"),
    ("Sales", 920_000, 31, "Claire Dubois"),
    ("Customer support", 410_000, 22, "Kenji Sato"),
    ("Marketing", 560_000, 12, "Laura Becker"),
    ("People Operations", 230_000, 9, "Amara Okafor"),
    ("Finance", 275_000, 11, "Jonas Lindqvist"),
    ("IT and security", 495_000, 14, "Miguel Santos"),
)
_BUDGET_NOTES = (
    ("Topic", "Note"),
    ("Approval", "Budget for Q3-2026, approved by the Northwind Robotics leadership team on 30 June 2026."),
    (
        "Manufacturing",
        "Includes the first production run of the R2 warehouse robot and the tooling for its 14-hour battery pack.",
    ),
    ("Engineering", "Headcount grows by six in Q3-2026 to support the R2 launch and the pilot customer programme."),
    (
        "IT and security",
        "Includes automated certificate renewal and synthetic checkout monitoring, both follow-ups from ERR-4021.",
    ),
    (
        "Customer support",
        "Extended hours during the R2 pilot, with on-site engineers in Germany and the Netherlands.",
    ),
    ("Currency", "Spend is in EUR at the planning rate; sales figures are costs only, not revenue targets."),
    (
        "Overruns",
        "A department expecting to exceed its budget by more than five percent tells Finance before the end of August.",
    ),
)


def _budget_xlsx() -> bytes:
    import openpyxl
    from openpyxl.styles import Font
    from openpyxl.writer.excel import ExcelWriter

    book = openpyxl.Workbook()
    book.properties.title, book.properties.creator = "Budget Q3-2026", COMPANY
    book.properties.created = book.properties.modified = _FIXED_TIME.replace(tzinfo=None)
    budget = book.active
    budget.title = "Budget"
    for row in _BUDGET:
        budget.append(row)
    for cell in budget[1]:
        cell.font = Font(bold=True)
    for cell in budget["B"][1:]:
        cell.number_format = "#,##0"
    for column, width in zip("ABCD", (22, 22, 12, 20), strict=True):
        budget.column_dimensions[column].width = width
    notes = book.create_sheet("Notes")
    for note in _BUDGET_NOTES:
        notes.append(note)
    for cell in notes[1]:
        cell.font = Font(bold=True)
    notes.column_dimensions["A"].width, notes.column_dimensions["B"].width = 18, 110
    buffer = io.BytesIO()
    # ExcelWriter directly: save() would stamp the current time as the modified date.
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        ExcelWriter(book, archive).write_data()
    return _fixed_zip_times(buffer.getvalue())


# --- PPTX ------------------------------------------------------------------------------------------

_ROADMAP_SLIDES = (
    (
        "Warehouse robot R2 launches in Q3-2026",
        (
            "General availability in Germany, France and the Netherlands from September 2026",
            "Replaces the R1 in new contracts; R1 customers can upgrade at a trade-in price",
            "Built on the Northwind fleet software, so existing maps and routes carry over",
        ),
    ),
    (
        "R2 hardware: what changed",
        (
            "Battery life of 14 hours on one charge, up from 9 hours on the R1",
            "Payload of 600 kg with a lift height of 1.8 metres",
            "Safety scanners certified for mixed traffic with people and forklifts",
            "Motors from Kessler Antriebe GmbH; battery packs from Voltaris Energy AB",
        ),
    ),
    (
        "Pilot customers",
        (
            "Three pilot sites: a grocery distributor, a pharmacy wholesaler and a car parts warehouse",
            "Each pilot runs 12 robots for eight weeks, with an on-site Northwind engineer",
            "Success means 99.5 percent mission completion and no safety incidents",
        ),
    ),
)
_ROADMAP_CLOSING = (
    "After the launch",
    "In Q4-2026 the team turns to fleet analytics: a dashboard that shows each customer how far their robots "
    "travelled, how much they carried and when their batteries will need replacing. The R3 concept study "
    "starts in 2027 and will look at picking single items from shelves, not only whole pallets. Until then, "
    "every customer request about the R2 goes to the product team through the roadmap board, and the "
    "roadmap is reviewed with sales at the start of every quarter.",
)


def _product_roadmap_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches, Pt

    presentation = Presentation()
    properties = presentation.core_properties
    properties.title, properties.author = "Product roadmap", COMPANY
    properties.last_modified_by, properties.revision = COMPANY, 1
    properties.created = properties.modified = _FIXED_TIME.replace(tzinfo=None)
    title_and_content, title_only = presentation.slide_layouts[1], presentation.slide_layouts[5]
    for title, bullets in _ROADMAP_SLIDES:
        slide = presentation.slides.add_slide(title_and_content)
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
    closing_title, closing_text = _ROADMAP_CLOSING
    slide = presentation.slides.add_slide(title_only)
    slide.shapes.title.text = closing_title
    box = slide.shapes.add_textbox(Inches(0.8), Inches(1.9), Inches(8.4), Inches(4.5)).text_frame
    box.word_wrap = True
    box.text = closing_text
    box.paragraphs[0].runs[0].font.size = Pt(20)
    buffer = io.BytesIO()
    presentation.save(buffer)
    return _fixed_zip_times(buffer.getvalue())


# --- HTML, Markdown, CSV, text ---------------------------------------------------------------------

_SECURITY_POLICY_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Password and sign-in policy - Northwind Robotics</title>
</head>
<body>
<h1>Password and sign-in policy</h1>
<p>This policy applies to every Northwind Robotics account: employees, contractors and service
accounts. It follows current guidance that long passwords and a second factor protect us far better
than frequent changes. The IT and security team owns it and reviews it every year.</p>
<h2>Passwords</h2>
<p>Choose a passphrase of at least 14 characters that you do not use anywhere else. A password
manager is provided to every employee; use it to generate and store passwords. Password rotation is
not required: you change a password only when there is a sign that it may have been exposed, and
then immediately.</p>
<ul>
<li>At least 14 characters; spaces and whole words are welcome.</li>
<li>Never reuse a Northwind Robotics password on another site.</li>
<li>Never share a password, not even with the service desk.</li>
</ul>
<h2>Multi-factor authentication</h2>
<p>MFA is required for every account, including email, the VPN, source control and the fleet
management console. Use the authenticator app or a hardware key; text messages are not accepted as a
second factor because they can be redirected.</p>
<h2>Administrators</h2>
<p>Administrators must use hardware security keys for every privileged sign-in. Each administrator
receives two keys: one for daily use and one kept in a safe place as a backup. A lost key is reported
to the security team on the same day and revoked.</p>
<h2>Requirements by account type</h2>
<table>
<thead>
<tr><th>Account type</th><th>Minimum length</th><th>Second factor</th><th>Rotation</th></tr>
</thead>
<tbody>
<tr><td>Employee</td><td>14 characters</td><td>Authenticator app or hardware key</td><td>Not required</td></tr>
<tr><td>Administrator</td><td>16 characters</td><td>Hardware key only</td><td>Not required</td></tr>
<tr><td>Service account</td><td>32 random characters</td><td>Not applicable; key vault only</td><td>Yearly</td></tr>
</tbody>
</table>
<h2>Reporting</h2>
<p>If you think a password or key has been exposed, tell the security team at once through the
service desk. Reporting quickly is always the right call; nobody is blamed for raising a false alarm.</p>
</body>
</html>
"""

_ONBOARDING_MD = """# Welcome to Northwind Robotics

This guide walks you through your first week. Your manager and your onboarding buddy will help with
anything that is unclear; the service desk is open from 08:00 to 18:00 CET.

## Before your first day

1. Sign your contract and return the equipment form to People Operations.
2. Choose your laptop: a 14-inch notebook for most roles, a workstation for simulation engineers.
3. Read the employee handbook, especially the sections on remote work and annual leave.

## Laptop setup

1. Sign in with the temporary password from your welcome email, then set a passphrase of at least
   14 characters.
2. Enrol the authenticator app for multi-factor authentication: MFA is required for every account.
3. Let the device management agent finish installing updates before you start working.

## VPN access

Install the company VPN client and enrol with the one-time code VPN-7731. The code only works
during your first week; after that the service desk issues a new one.

```bash
# Check that the VPN is connected and that you can reach the internal wiki
northwind-vpn status
curl --head https://wiki.northwind.internal/
```

## First-week checklist

1. Meet your onboarding buddy and book a tour of the robot lab.
2. Complete the safety training for working near the R2 warehouse robots.
3. Join the #r2-launch and #help-it chat channels.
4. Read the incident report for ERR-4021 to see how we run blameless postmortems.
5. Agree your remote work pattern with your manager.

## Who to ask

People Operations handles contracts, leave and benefits. The IT service desk handles laptops, the
VPN and passwords. Your manager sets your goals for the first 90 days and reviews them with you.
"""

_SUPPLIERS = (
    ("Supplier", "Country", "Component", "Contract end"),
    ("Kessler Antriebe GmbH", "Germany", "Brushless drive motors for the R1 and R2", "2027-06-30"),
    ("Voltaris Energy AB", "Sweden", "Lithium iron phosphate battery packs", "2028-03-31"),
    ("Lumen Optics BV", "Netherlands", "Safety laser scanners and mounting kits", "2027-01-31"),
    ("Atelier Mecanique Roux", "France", "Welded steel chassis frames", "2026-12-31"),
    ("Takumi Sensors KK", "Japan", "Wheel encoders and inertial sensors", "2027-09-30"),
    ("Brennan Castings Ltd", "United Kingdom", "Aluminium castings for the lift mast", "2026-11-30"),
    ("Polska Kable Sp. z o.o.", "Poland", "Wiring harnesses and connectors", "2027-04-30"),
    ("Rio Grande Plastics Inc", "United States", "Injection moulded bumpers and covers", "2027-02-28"),
    ("Alpen Elektronik AG", "Austria", "Motor controllers and power boards", "2028-06-30"),
    ("Nordic Fasteners Oy", "Finland", "Stainless steel fasteners", "2026-10-31"),
)

_MEETING_NOTES_TXT = """R2 launch readiness review - 2 September 2026

Attendees: Priya Raman (Engineering), Tomasz Wojcik (Manufacturing), Claire Dubois (Sales), Kenji Sato
(Customer support), Miguel Santos (IT and security). Notes taken by Laura Becker.

Overall status: amber. The R2 warehouse robot is on track for general availability in Q3-2026, but
two items need a decision this week. Manufacturing has completed 40 of the 60 robots for the first
production run; the remaining 20 are waiting on battery packs.

Battery supply: Voltaris Energy AB, our battery supplier, delivered the second batch of packs ten days
late because a cell shipment was held at customs. Tomasz confirmed the third batch is on schedule for
9 September. The 14-hour battery life was confirmed again in the endurance test last week. Action:
Tomasz to agree a safety stock of 15 packs with Voltaris before the end of the month.

Motors: Kessler Antriebe GmbH delivered all drive motors on time. No concerns.

ERR-4021 follow-up: Miguel reported that automated certificate renewal is now live on the payments
load balancer, and the 30-day expiry alarm pages the on-call rota. The synthetic checkout test runs
every minute. The R2 pre-order shop uses the same payment gateway, so Sales asked for a load test
before the launch announcement. Action: Miguel to run the load test by 12 September.

Pilot customers: all three pilot sites have signed. Kenji's team will staff extended support hours
during the eight-week pilot, with on-site engineers in Germany and the Netherlands. Claire will share
the pilot success criteria with each customer: 99.5 percent mission completion and no safety incidents.

Decision: the launch date stays at 22 September 2026, provided the battery safety stock is agreed and
the gateway load test passes. Next review on 9 September at 10:00.
"""


def _security_policy_html() -> bytes:
    return _SECURITY_POLICY_HTML.encode()


def _onboarding_md() -> bytes:
    return _ONBOARDING_MD.encode()


def _suppliers_csv() -> bytes:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(_SUPPLIERS)
    return text.getvalue().encode()


def _meeting_notes_txt() -> bytes:
    return _MEETING_NOTES_TXT.encode()


def _fixed_zip_times(archive: bytes) -> bytes:
    """The same archive with every entry stamped at one fixed time: zip writers use the clock."""
    source = zipfile.ZipFile(io.BytesIO(archive))
    buffer = io.BytesIO()
    with source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            fixed = zipfile.ZipInfo(entry.filename, date_time=_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(entry))
    return buffer.getvalue()


_DOCUMENTS: tuple[tuple[str, Callable[[], bytes]], ...] = (
    ("incident-report-ERR-4021.pdf", _incident_report_pdf),
    ("employee-handbook.docx", _employee_handbook_docx),
    ("budget-Q3-2026.xlsx", _budget_xlsx),
    ("product-roadmap.pptx", _product_roadmap_pptx),
    ("security-policy.html", _security_policy_html),
    ("onboarding.md", _onboarding_md),
    ("suppliers.csv", _suppliers_csv),
    ("meeting-notes-2026-09-02.txt", _meeting_notes_txt),
    # Scans: words only in pixels, one page upside down; a screenshot of a table; a fax-quality copy that
    # OCR reads with low confidence and says so.
    ("scanned-remittance.pdf", lambda: scan_corpus.scanned_pdf().content),
    ("returns-dashboard.png", lambda: scan_corpus.table_screenshot().content),
    ("faded-delivery-note.pdf", lambda: scan_corpus.degraded_pdf().content),
)
