/** Shapes of the studio API payloads (the `data` member of the envelope). */

export interface IUserInfo {
  id: string;
  name: string;
  workspace_id: string;
}

export interface IDatabaseHealth {
  ok: boolean;
  dialect: string;
  revision: string | null;
  error?: string;
}

export interface ISandboxHealth {
  installed: boolean;
  started: boolean;
  workers: number;
  busy: number;
  runs: number;
  restarts: number;
  error?: string;
}

/** `GET coze_lab/api/health` */
export interface IHealthInfo {
  version: string;
  user: IUserInfo;
  database: IDatabaseHealth;
  sandbox: ISandboxHealth;
}
