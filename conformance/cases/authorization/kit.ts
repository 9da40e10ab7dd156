/** Steps that several case files of the authorization profile share. */

export const GUARDED = { capabilities: ['tap.test.guarded'] };

export const TWO_SESSIONS = { binding: 'websocket' as const };
