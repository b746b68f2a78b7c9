"""Sums sales by day."""
import collections


def daily_totals(sales):
    by_day = collections.defaultdict(int)
    for sale in sales:
        by_day[sale.day] += sale.cents
    return by_day


class TotalsTable:
    def __init__(self, totals):
        self.totals = totals

    def rows(self):
        return sorted(self.totals.items())

    def grand_total(self):
        return sum(self.totals.values())
