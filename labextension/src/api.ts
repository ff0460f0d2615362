/**
 * Typed access to the coze_lab studio API served by the Jupyter server
 * extension under `<baseUrl>/coze_lab/api/`.
 *
 * Responses use the Coze envelope `{"code": 0, "msg": "", "data": ...}`.
 * `requestAPI` unwraps it and throws a `CozeApiError` for a non-zero code,
 * an HTTP error or a network failure.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** URL prefix of the studio API, relative to the server base URL. */
export const API_NAMESPACE = 'coze_lab/api';

/** The Coze response envelope. */
export interface ICozeEnvelope<T> {
  code: number;
  msg: string;
  data: T;
}

/** An error reported by the studio API (or while reaching it). */
export class CozeApiError extends Error {
  /** Coze error code; `-1` when the server gave none (network or HTTP failure). */
  readonly code: number;
  /** The server's `msg`, or a description of the failure. */
  readonly msg: string;
  /** HTTP status, `0` for a network failure. */
  readonly status: number;

  constructor(code: number, msg: string, status: number) {
    super(msg || `coze_lab API error ${code}`);
    this.name = 'CozeApiError';
    this.code = code;
    this.msg = msg;
    this.status = status;
  }
}

/** Build the absolute URL of an API endpoint, e.g. `apiUrl('health')`. */
export function apiUrl(
  endPoint: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  return URLExt.join(settings.baseUrl, API_NAMESPACE, endPoint);
}

function isEnvelope(value: unknown): value is ICozeEnvelope<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { code?: unknown }).code === 'number'
  );
}

/**
 * Call a studio API endpoint and return the envelope's `data`.
 *
 * Uses `ServerConnection.makeRequest`, which adds the XSRF token and the
 * Jupyter authorization, so it works with token auth and under JupyterHub.
 *
 * @param endPoint path below `coze_lab/api/`, e.g. `health` or `bots/123`
 * @param init fetch options (method, body, ...)
 * @param settings server connection settings
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = apiUrl(endPoint, settings);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CozeApiError(-1, `Cannot reach the Jupyter server: ${reason}`, 0);
  }

  const text = await response.text();
  let body: unknown = undefined;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }

  if (isEnvelope(body)) {
    const msg = typeof body.msg === 'string' ? body.msg : '';
    if (body.code !== 0) {
      throw new CozeApiError(body.code, msg, response.status);
    }
    if (!response.ok) {
      throw new CozeApiError(
        -1,
        msg || `HTTP ${response.status} ${response.statusText}`,
        response.status
      );
    }
    return body.data as T;
  }

  if (!response.ok) {
    // Tornado / jupyter_server errors look like {"message": ..., "reason": ...}.
    let msg = `HTTP ${response.status} ${response.statusText}`.trim();
    if (typeof body === 'object' && body !== null) {
      const err = body as { message?: unknown; reason?: unknown };
      const detail = err.message || err.reason;
      if (typeof detail === 'string' && detail) {
        msg = `${msg}: ${detail}`;
      }
    }
    throw new CozeApiError(-1, msg, response.status);
  }
  throw new CozeApiError(
    -1,
    `Unexpected response from ${url} (not a Coze envelope)`,
    response.status
  );
}
