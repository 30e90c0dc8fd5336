export interface Page {
  page: number;
  perPage: number;
}
export const offsetOf = (p: Page): number => (p.page - 1) * p.perPage;
