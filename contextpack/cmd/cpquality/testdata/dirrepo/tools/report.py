"""Writes the daily sales report."""
from .totals import daily_totals, TotalsTable


def write_report(sales, out):
    table = TotalsTable(daily_totals(sales))
    for day, amount in table.rows():
        out.write(f"{day}: {amount}\n")
    return table.grand_total()
