/**
 * Text that can go everywhere Longhaul writes it (Postgres text and jsonb, blobs, the prompt, search
 * attributes, the Web UI): NUL characters removed (Postgres refuses them in text and jsonb) and
 * unpaired UTF-16 surrogates replaced with U+FFFD (not Unicode: UTF-8 cannot encode them, jsonb
 * refuses their escapes). Pure, so workflow code may use it. Text that is already readable comes
 * back unchanged.
 */
const unpairedSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function readableText(text: string): string {
  return text.replaceAll('\u0000', '').replace(unpairedSurrogate, '\uFFFD');
}

/** True when `readableText` would change the text. */
export function hasUnreadableText(text: string): boolean {
  return text.includes('\u0000') || new RegExp(unpairedSurrogate.source).test(text);
}
