/**
 * Small DOM, markdown and event-stream helpers shared by the sidebar sections.
 */
import { ServerConnection } from '@jupyterlab/services';

import { CozeApiError, apiUrl } from './api';

type Child = Node | string | number | null | undefined | false;

/** `h('button', {class: 'x', onclick: f}, 'Label')` */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key === 'class') {
      el.className = String(value);
    } else if (key === 'testid') {
      el.dataset.testid = String(value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value as Record<string, string>);
    } else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (key === 'value') {
      (el as unknown as HTMLInputElement).value = String(value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/**
 * A textarea for free text that grows with what is typed (up to `maxRows`), so long
 * answers and inputs stay readable in a narrow sidebar.
 */
export function growingTextarea(
  attrs: Record<string, unknown> = {},
  maxRows = 12
): HTMLTextAreaElement {
  const area = h('textarea', { rows: '2', ...attrs });
  area.classList.add('jp-CozeLab-grow');
  const fit = (): void => {
    area.style.height = 'auto';
    const line = parseFloat(getComputedStyle(area).lineHeight) || 18;
    area.style.height = `${Math.min(area.scrollHeight + 2, line * maxRows)}px`;
  };
  area.addEventListener('input', fit);
  // once it is in the page (defaults filled in before that are measured then)
  requestAnimationFrame(fit);
  return area;
}

/** The text of an error for the error box: `[code] msg`. */
export function errorText(error: unknown): string {
  if (error instanceof CozeApiError) {
    return error.code >= 0 ? `[${error.code}] ${error.msg}` : error.msg;
  }
  return error instanceof Error ? error.message : String(error);
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    c =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string
  );
}

function inline(text: string): string {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>');
}

/** A small, safe markdown subset (escaped first): code fences, lists, inline marks. */
export function markdown(source: string): string {
  const out: string[] = [];
  const lines = source.split('\n');
  let para: string[] = [];
  let list = false;
  const flush = (): void => {
    if (para.length) {
      out.push(`<p>${para.map(inline).join('<br>')}</p>`);
    }
    para = [];
    if (list) {
      out.push('</ul>');
    }
    list = false;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('```')) {
      flush();
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i].startsWith('```')) {
        code.push(lines[i++]);
      }
      out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`);
      continue;
    }
    const bullet = line.match(/^\s*(?:[-*]|\d+[.)])\s+(.*)$/);
    if (bullet) {
      if (para.length) {
        out.push(`<p>${para.map(inline).join('<br>')}</p>`);
        para = [];
      }
      if (!list) {
        out.push('<ul>');
        list = true;
      }
      out.push(`<li>${inline(bullet[1])}</li>`);
    } else if (!line.trim()) {
      flush();
    } else {
      para.push(line);
    }
  }
  flush();
  return out.join('');
}

/** One server-sent event. */
export interface ISseEvent {
  id: string;
  event: string;
  data: any;
}

/**
 * POST/GET a studio endpoint and yield its server-sent events as they arrive.
 *
 * Uses `fetch()` through `ServerConnection.makeRequest` (XSRF token and
 * Jupyter authorization headers), never `EventSource`, which cannot send
 * them and is refused under JupyterHub.
 */
export async function* streamAPI(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): AsyncGenerator<ISseEvent> {
  const headers = new Headers(init.headers);
  headers.set('Accept', 'text/event-stream');
  const response = await ServerConnection.makeRequest(
    apiUrl(endPoint, settings),
    { ...init, headers },
    settings
  );
  const type = response.headers.get('Content-Type') || '';
  if (!response.ok || !type.startsWith('text/event-stream') || !response.body) {
    let msg = `HTTP ${response.status}`;
    let code = -1;
    try {
      const body = await response.json();
      code = typeof body.code === 'number' ? body.code : -1;
      msg = body.msg || msg;
    } catch {
      /* not JSON */
    }
    throw new CozeApiError(code, msg, response.status);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      break;
    }
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = parseBlock(block);
      if (event) {
        yield event;
      }
    }
  }
}

function parseBlock(block: string): ISseEvent | null {
  let id = '';
  let event = '';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (!line || line.startsWith(':')) {
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) {
      value = value.slice(1);
    }
    if (name === 'data') {
      data.push(value);
    } else if (name === 'event') {
      event = value;
    } else if (name === 'id') {
      id = value;
    }
  }
  if (!event && !data.length) {
    return null;
  }
  const raw = data.join('\n');
  let parsed: any = raw;
  try {
    parsed = raw ? JSON.parse(raw) : null;
  } catch {
    /* plain text */
  }
  return { id, event, data: parsed };
}

/** A section skeleton: an error box and a body, with `refresh()` sharing one request. */
export function errorBox(testid: string): HTMLDivElement {
  const box = h('div', { class: 'jp-CozeLab-error', testid, role: 'alert' });
  box.hidden = true;
  return box;
}

export function showError(box: HTMLElement, error: unknown): void {
  if (error === null || error === undefined) {
    box.hidden = true;
    box.textContent = '';
  } else {
    box.hidden = false;
    box.textContent = errorText(error);
  }
}
