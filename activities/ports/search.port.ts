/** Port: the local search engine (documents split into pages) that the `search` and `access` tools read. */

/** One ranked hit: a page (passage) of a document. */
export interface SearchHit {
  readonly documentId: string;
  readonly page: number;
  readonly title: string;
  readonly text: string;
  /** Engine-specific score; higher is better. Only the order is comparable across engines. */
  readonly score: number;
}

/** One page of a document, with the document's page count so a reader knows where it is. */
export interface DocumentPage {
  readonly documentId: string;
  readonly title: string;
  readonly url: string | null;
  readonly page: number;
  readonly pages: number;
  readonly text: string;
}

export interface SearchEngine {
  /** The name reported in benchmarks: fts, dense, hybrid. */
  readonly name: string;
  /** Up to k hits, best first; an empty or stop-word-only query returns []. */
  search(query: string, k: number): Promise<SearchHit[]>;
  /** A page of a document (1-based), or null when the document or page does not exist. */
  page(documentId: string, page: number): Promise<DocumentPage | null>;
}

/** Port: an HTTP web search API (SearXNG JSON, Serper-compatible). */
export interface WebSearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
}

export interface WebSearchClient {
  /** `signal` aborts the request (the tool's time limit). */
  search(query: string, k: number, signal?: AbortSignal): Promise<WebSearchResult[]>;
}

/** Port: URL → readable text, with the fetcher's safety limits applied. */
export interface FetchedPage {
  /** The final URL after redirects. */
  readonly url: string;
  readonly title: string;
  readonly text: string;
  readonly contentType: string;
  /** True when the body was cut at the byte limit. */
  readonly cut: boolean;
}

export interface PageFetcher {
  /** `signal` aborts the fetch (the tool's time limit) besides the fetcher's own limit. */
  fetch(url: string, signal?: AbortSignal): Promise<FetchedPage>;
}

/** Port: a read-only SQL database a user plugs in as a tool. */
export interface SqlRows {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly unknown[])[];
  /** True when more rows existed than the row limit. */
  readonly cut: boolean;
}

export interface ReadOnlySql {
  query(sql: string): Promise<SqlRows>;
}

/** Port: an embedding model behind an OpenAI-compatible /v1/embeddings endpoint (E5 locally). */
export interface EmbeddingClient {
  /** The model name vectors are stored under (vectors of different models never mix). */
  readonly model: string;
  /** One unit-length vector per text; `kind` tells asymmetric models (E5) a query from a passage. */
  embed(texts: readonly string[], kind: 'query' | 'passage'): Promise<Float32Array[]>;
}
