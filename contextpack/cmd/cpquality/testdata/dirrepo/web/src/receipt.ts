import { formatMoney, type Money } from "./format";
import { renderLine } from "@shop/web/src/lines";

// A receipt lists what was bought and the total.
export function renderReceipt(lines: Array<[string, Money]>, total: Money): string {
  const body = lines.map(([name, cost]) => renderLine(name, formatMoney(cost)));
  return [...body, `Total: ${formatMoney(total)}`].join("\n");
}
