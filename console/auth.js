// Who the console calls the API as. On AWS: Cognito's hosted sign-in, the authorization code flow with PKCE
// (a single-page app keeps no secret). Locally: a token from `quire token`, pasted, or the local stack's
// one-click sign-in, which it offers only on loopback. The token lives in sessionStorage: one tab, gone
// when the tab closes; it is sent only as a bearer header, never as a cookie.

const TOKEN_KEY = "quire.token";
const PKCE_KEY = "quire.pkce";
const listeners = new Set();

function decodeClaims(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "=")));
  } catch {
    return null;
  }
}

export const session = {
  token() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return null;
    const claims = decodeClaims(token);
    if (claims && claims.exp && claims.exp * 1000 <= Date.now()) {
      sessionStorage.removeItem(TOKEN_KEY);
      return null;
    }
    return token;
  },
  /** The token's claims, for showing who is signed in (the API verifies them; the console only reads). */
  claims() {
    const token = this.token();
    return token ? decodeClaims(token) : null;
  },
  set(token) {
    const trimmed = (token || "").trim();
    if (!decodeClaims(trimmed)) throw new Error("that is not a token: paste what `quire token` printed");
    sessionStorage.setItem(TOKEN_KEY, trimmed);
    listeners.forEach((listener) => listener(true));
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    listeners.forEach((listener) => listener(false));
  },
  expired() {
    if (sessionStorage.getItem(TOKEN_KEY)) this.clear();
  },
  onChange(listener) {
    listeners.add(listener);
  },
};

const SIGN_IN_KEY = "quire.signInKey";

/**
 * The address `quire up` prints carries the stack's sign-in key in its fragment (#sign-in=…), which no request
 * sends: kept for this tab, and taken out of the address bar and the history at once.
 */
export function keepSignInKey() {
  const match = /^#sign-in=([A-Za-z0-9_-]{16,128})$/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(SIGN_IN_KEY, match[1]);
  history.replaceState(null, "", `${location.pathname}#/upload`);
}

export function hasSignInKey() {
  return Boolean(sessionStorage.getItem(SIGN_IN_KEY));
}

/** The local stack's one-click sign-in (loopback only, with the stack's sign-in key; 404 anywhere else). */
export async function localSignIn(collections, role) {
  const response = await fetch("/console/local-sign-in", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ collections, role, key: sessionStorage.getItem(SIGN_IN_KEY) || "" }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message || `sign-in failed (${response.status})`);
  session.set(body.token);
}

function base64Url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(size = 32) {
  return base64Url(crypto.getRandomValues(new Uint8Array(size)));
}

/** Off to the hosted sign-in page, with a fresh PKCE verifier and state kept for the way back. */
export async function startHostedSignIn(auth) {
  const verifier = randomText(48);
  const state = randomText(16);
  const challenge = base64Url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, back: location.hash }));
  const url = new URL(`${auth.domain}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: auth.clientId,
    redirect_uri: auth.redirectUri,
    scope: auth.scopes.join(" "),
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.toString());
}

/** Back from the hosted sign-in: trade the code for tokens (with the verifier), then clean the address bar. */
export async function finishHostedSignIn(auth) {
  const params = new URLSearchParams(location.search);
  const code = params.get("code");
  if (!code) return false;
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) || "null");
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", `${location.pathname}${saved?.back || ""}`);
  if (!saved || saved.state !== params.get("state"))
    throw new Error("the sign-in answer did not match this tab: sign in again");
  const response = await fetch(`${auth.domain}/oauth2/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: auth.clientId,
      code,
      redirect_uri: auth.redirectUri,
      code_verifier: saved.verifier,
    }).toString(),
  });
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok || !tokens.access_token)
    throw new Error(tokens.error_description || "the sign-in could not be completed");
  session.set(tokens.access_token); // the API's authorizer takes the access token (it carries the scope)
  return true;
}

export function hostedSignOut(auth) {
  session.clear();
  const url = new URL(`${auth.domain}/logout`);
  url.search = new URLSearchParams({ client_id: auth.clientId, logout_uri: auth.logoutUri }).toString();
  location.assign(url.toString());
}
