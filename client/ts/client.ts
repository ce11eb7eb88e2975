// A typed TypeScript client of the fleetapi client API v2: openapi-fetch
// over the types openapi-typescript generates from the OpenAPI document
// (schema.d.ts; regenerate with `npm run gen:ts` in web/). Hand-written.
import createClient, { type Client } from "openapi-fetch";
import type { paths } from "./schema";

export type { paths, components, operations } from "./schema";

/** A client of the API; every call is typed by its path and method. */
export type FleetClient = Client<paths>;

/**
 * createFleetClient returns a client of the API at baseUrl (the server's
 * origin followed by /api/v2, e.g. "http://127.0.0.1:8080/api/v2") that
 * sends token as the bearer token of every request.
 */
export function createFleetClient(baseUrl: string, token: string): FleetClient {
  return createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}` },
  });
}
