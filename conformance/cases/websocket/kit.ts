/** Steps that several case files of the websocket profile share. */

export const WS = { binding: 'websocket' as const };
