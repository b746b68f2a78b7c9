// One line of a receipt: the name padded to a column, then the amount.
export function renderLine(name: string, amount: string): string {
  const column = 24;
  return name.padEnd(column, ".") + " " + amount;
}
