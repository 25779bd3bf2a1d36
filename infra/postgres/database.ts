import pg from 'pg';

/** A connection pool; errors on idle clients are logged, not thrown (a restarted server must not kill a worker). */
export function createPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 });
  pool.on('error', (error) => console.warn(`[postgres] idle client error: ${error.message}`));
  return pool;
}
