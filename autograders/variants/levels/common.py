"""What the levels' pools share: sizes that divide, and leaving the sheet's own numbers out."""


def divides(entry):
    d_model, h = entry["d_model"], entry["h"]
    if h < 1 or d_model % h:
        return f"h = {h} does not divide d_model = {d_model}"
    return None


def without_sheet(entries, sheet):
    return tuple(e for e in entries if e != sheet)
