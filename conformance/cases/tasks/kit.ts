/** Steps that several case files of the tasks profile share. */

export const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });
