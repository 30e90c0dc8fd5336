/**
 * The store seam (issues 10 and 24): how services and pipeline stages get a transaction without
 * holding a database handle. Stores take an Executor (store/executor.ts); everything else takes a
 * UnitOfWork. Both backends implement it with ScopedUnitOfWork (store/tx-scope.ts): `run(async
 * fn)` is one transaction (a savepoint when nested), a store call inside finds the transaction
 * through AsyncLocalStorage, and `afterCommit` callbacks run once the outermost commit is done.
 */
export type { AfterCommit, AsyncUnitOfWork as UnitOfWork } from "./tx-scope.ts";
