export declare const migrationFile: string;
export declare const shippedKeys: string[];
export declare const shippedMappingSets: { source: string; target: string }[];
export declare function shippedFrameworkId(key: string): string;
export declare function shippedRequirementId(key: string, ref: string): string;
export declare function shippedMappingId(source: string, sourceRef: string, target: string, targetRef: string): string;
export declare function readShipped(key: string): {
  key: string;
  name: string;
  version: string;
  source: string;
  license: string;
  requirements: { ref: string; title: string; parent: string | null; assessable: boolean }[];
};
export declare function shippedMigrationSql(): string;
