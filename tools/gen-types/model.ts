/** The type model of gen-types, for dev scripts and tests; it ships with tapctl, in reference/tapctl/gen-types/. */
export * from '../../reference/tapctl/gen-types/model.ts';
