/** Steps that several case files of the authorization profile share. */

export const GUARDED = { capabilities: ['tap.test.guarded'] };

export const TWO_SESSIONS = { binding: 'websocket' as const };

/** Two sessions of two principals: in a run whose sessions present a client certificate, the second presents another. */
export const TWO_PRINCIPALS = { ...TWO_SESSIONS, principals: 'two' as const };
