// @ts-check
// Credentials in a page's URL (?token= a join token, ?key= the admin key) are read once and taken
// out of the address bar: left there they would stay in the history, be bookmarked, shared with a
// screenshot or a copied link, and sent in the Referer of the page's requests
// (docs/security.md §9).

/** The URL parameters that carry credentials. */
export const CREDENTIAL_PARAMS = Object.freeze(['token', 'key']);

/**
 * Reads ?token= and ?key= from loc and replaces the history entry with the same URL without
 * them (the other parameters and the fragment stay). Nothing is replaced when the URL carries
 * neither.
 * @param {{href: string}} loc the page's location
 * @param {{state: any, replaceState: (data: any, unused: string, url?: string | URL | null) => void}} hist the page's history
 * @returns {{token: string, key: string, params: URLSearchParams}} the credentials ('' when absent) and the cleaned parameters
 */
export function takeCredentials(loc, hist) {
  const url = new URL(loc.href);
  const token = url.searchParams.get('token') || '';
  const key = url.searchParams.get('key') || '';
  const found = CREDENTIAL_PARAMS.some((p) => url.searchParams.has(p));
  for (const p of CREDENTIAL_PARAMS) url.searchParams.delete(p);
  if (found) hist.replaceState(hist.state, '', url.pathname + url.search + url.hash);
  return { token, key, params: new URLSearchParams(url.search) };
}
