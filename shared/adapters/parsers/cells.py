"""Cell values as a person sees them, and the rules for turning rows into located table blocks."""

from datetime import date, datetime, time

ROWS_PER_BLOCK = 100


def column_letters(index: int) -> str:
    """0 → A, 25 → Z, 26 → AA."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(65 + remainder) + letters
    return letters


def a1_range(first_row: int, last_row: int, columns: int, first_column: int = 0) -> str:
    return f"{column_letters(first_column)}{first_row}:{column_letters(first_column + max(columns, 1) - 1)}{last_row}"


def display(value: object, number_format: str = "General") -> str:
    """A cell's value as displayed: dates as dates, whole numbers without ".0", percentages as percent."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, int | float):
        return _number(value, number_format)
    return str(value).strip()


def _number(value: float, number_format: str) -> str:
    if "%" in number_format:
        return f"{value * 100:g}%"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
