// Formats amounts for the storefront.
export interface Money {
  cents: number;
  currency: string;
}

export function formatMoney(money: Money): string {
  const whole = Math.floor(money.cents / 100);
  const part = String(money.cents % 100).padStart(2, "0");
  return `${money.currency} ${whole}.${part}`;
}
