import { AppError } from "../../platform/errors.js";

export type DeviceManagement = {
  /** Removes every host carrying the label from the device-management system. */
  removeHostsWithLabel(labelId: number): Promise<number>;
};

/** Client for a Fleet-compatible device-management API (`/api/v1/fleet/...`). */
export function createDeviceManagement(baseUrl: string, token: string | undefined, timeoutMs = 10_000): DeviceManagement {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};

  async function call(method: string, path: string): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(new URL(path, baseUrl), { method, headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new AppError("BAD_GATEWAY", `The device-management system could not be reached (${(error as Error).name})`);
    }
    if (!response.ok && response.status !== 404) {
      throw new AppError("BAD_GATEWAY", `The device-management system answered ${response.status} to ${method} ${path}`);
    }
    return response;
  }

  return {
    async removeHostsWithLabel(labelId) {
      const listed = await call("GET", `/api/v1/fleet/labels/${labelId}/hosts`);
      if (listed.status === 404) return 0;
      const body = (await listed.json().catch(() => ({}))) as { hosts?: { id: number }[] };
      const hosts = body.hosts ?? [];
      for (const host of hosts) await call("DELETE", `/api/v1/fleet/hosts/${host.id}`);
      return hosts.length;
    },
  };
}
