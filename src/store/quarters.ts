/**
 * History and inbox totals are kept per line and UTC quarter hour (the count
 * tables' `cuarto`); a date range answers from them only when both its ends
 * fall on a quarter.
 */
export const QUARTER_MS = 900_000;
export const onQuarter = (t: number | undefined): boolean => t === undefined || t % QUARTER_MS === 0;
