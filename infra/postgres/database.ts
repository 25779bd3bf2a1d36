import pg from 'pg';

/** A connection pool; errors on idle clients are logged, not thrown (a restarted server must not kill a worker). */
export function createPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 });
  pool.on('error', (error) => console.warn(`[postgres] idle client error: ${error.message}`));
  return pool;
}

export interface TransactionOptions<T> {
  /** BEGIN TRANSACTION READ ONLY, and never commit. @default false */
  readonly readOnly?: boolean;
  /** Commit only when this holds for the result (otherwise roll back and still return it). @default always */
  readonly commitIf?: (result: T) => boolean;
}

/**
 * Run `work` in one transaction: COMMIT when it returns, ROLLBACK when it throws (the error is
 * rethrown). Given a pool, it takes a client of its own and releases it either way.
 */
export async function withTransaction<T>(
  database: pg.Pool | pg.ClientBase,
  work: (client: pg.ClientBase) => Promise<T>,
  options: TransactionOptions<T> = {},
): Promise<T> {
  const client = database instanceof pg.Pool ? await database.connect() : database;
  // A checked-out client has no listener for 'error' (the pool's idle listener is removed on checkout):
  // a server that goes away between two statements (a Postgres restart) would crash the process.
  let broken = false;
  const onError = (error: Error) => {
    broken = true;
    console.warn(`[postgres] connection lost in a transaction: ${error.message}`);
  };
  if (client !== database) client.on('error', onError);
  try {
    await client.query(options.readOnly ? 'BEGIN TRANSACTION READ ONLY' : 'BEGIN');
    const result = await work(client);
    await client.query(!options.readOnly && (options.commitIf?.(result) ?? true) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    if (client !== database) {
      client.removeListener('error', onError);
      (client as pg.PoolClient).release(broken); // a broken connection is discarded, not pooled
    }
  }
}
