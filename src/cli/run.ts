import path from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { auditSignerFromConfig } from "../modules/audit/audit.keys.js";
import type { StoreOf } from "../modules/comments/attachments.jobs.js";
import type { Config } from "../platform/config.js";
import { DataDirLockedError } from "../platform/db/data-dir-lock.js";
import type { Database, DatabaseOptions } from "../platform/db/database.js";
import type { JobQueue } from "../platform/jobs.js";
import { type Command, type CommandContext, type CommandResult, commands, type Prepared, UsageError } from "./commands.js";

// The service modules, the configuration and the database (PGlite, Prisma, pg) are imported only
// once the command line names a command to run: help and usage errors answer without them.

export type CliIo = {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
};

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

const invocation = "npm run --silent cli --";
const globalFlags = new Set(["--json", "-h", "--help"]);

/** Runs one CLI invocation and answers its exit code. Nothing but the result goes to stdout. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let json: boolean;
  let prepared: Prepared;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.kind === "help") {
      io.stdout(`${parsed.text}\n`);
      return EXIT_OK;
    }
    json = parsed.json;
    prepared = parsed.command.prepare(parsed.values, await import("./services.js"));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const about = error.command;
    const hint = about
      ? `Usage: ${usageLine(about)}\nRun "${invocation} ${about.path.join(" ")} --help" for details.`
      : `Run "${invocation} --help" for the list of commands.`;
    io.stderr(`error: ${error.message}\n${hint}\n`);
    return EXIT_USAGE;
  }

  let config: Config;
  try {
    const { loadConfig } = await import("../platform/config.js");
    config = loadConfig(io.env);
  } catch (error) {
    io.stderr(`error: ${messageOf(error)}\n`);
    return EXIT_FAILED;
  }

  const options: DatabaseOptions = config.databaseUrl
    ? {
        kind: "postgres",
        url: config.databaseUrl,
        directUrl: config.databaseDirectUrl,
        poolSize: 2,
        preparedStatements: config.databasePreparedStatements,
      }
    : { kind: "embedded", dataDir: config.dataDir };
  const { openDatabase } = await import("../platform/db/database.js");
  let database: Database;
  try {
    database = await openDatabase(options);
  } catch (error) {
    io.stderr(
      error instanceof DataDirLockedError
        ? `error: ${error.message}\n`
        : `error: could not open the database (${describeDatabase(options)}): ${messageOf(error)}\n`,
    );
    return EXIT_FAILED;
  }

  let jobQueue: Promise<JobQueue | undefined> | undefined;
  let attachmentStores: Promise<StoreOf> | undefined;
  const context: CommandContext = {
    auditSigner: () => auditSignerFromConfig(config),
    downloadTtlSeconds: config.attachments.downloadTtlSeconds,
    attachmentStores() {
      // Loaded on first use: the s3 store brings the AWS SDK.
      attachmentStores ??= import("../platform/attachments/create-store.js").then(
        ({ attachmentUrlSecret, openAttachmentStores }) =>
          openAttachmentStores(
            { ...config.attachments, urlSecret: attachmentUrlSecret(config, database.db) },
            { db: database.db },
          ).storeOf,
      );
      return attachmentStores;
    },
    jobQueue() {
      jobQueue ??= import("../platform/jobs.js").then(async ({ startJobQueue }) => {
        const { default: pino } = await import("pino");
        try {
          return await startJobQueue({
            pglite: database.pglite,
            url: config.databaseUrl,
            poolSize: 1,
            maintain: false,
            logger: pino({ level: "silent" }),
          });
        } catch (error) {
          // Never started by a service with e-mail configured: there are no jobs to see.
          if (messageOf(error).includes("not installed")) return undefined;
          throw error;
        }
      });
      return jobQueue;
    },
  };
  let code = EXIT_OK;
  try {
    const result: CommandResult = await prepared(database.db, context);
    io.stdout(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
    code = result.exitCode ?? EXIT_OK;
  } catch (error) {
    code = EXIT_FAILED;
    io.stderr(await describeFailure(error));
  } finally {
    try {
      await (await jobQueue?.catch(() => undefined))?.stop(1_000);
    } catch (error) {
      code = EXIT_FAILED;
      io.stderr(`error: could not stop the job queue cleanly: ${messageOf(error)}\n`);
    }
    try {
      await database.close();
    } catch (error) {
      code = EXIT_FAILED;
      io.stderr(`error: could not close the database cleanly: ${messageOf(error)}\n`);
    }
  }
  return code;
}

type ParsedCommandLine =
  | { kind: "help"; text: string }
  | { kind: "run"; command: Command; json: boolean; values: Record<string, string | boolean | undefined> };

function parseCommandLine(argv: string[]): ParsedCommandLine {
  let i = 0;
  let help = false;
  let json = false;
  // Global flags may also come before the command words.
  for (; i < argv.length && globalFlags.has(argv[i] as string); i++) {
    if (argv[i] === "--json") json = true;
    else help = true;
  }
  const words: string[] = [];
  for (; i < argv.length && !(argv[i] as string).startsWith("-"); i++) words.push(argv[i] as string);
  const rest = argv.slice(i);

  if (words[0] === "help") return { kind: "help", text: helpFor(words.slice(1)) };
  if (words.length === 0) {
    if (help) return { kind: "help", text: programHelp() };
    throw new UsageError(rest.length ? `Put the command first, before ${rest[0]}` : "Missing command");
  }

  const command = commands.find((c) => c.path.every((word, n) => words[n] === word));
  if (!command) {
    const group = groupOf(words[0] as string);
    if (!group.length) throw new UsageError(`Unknown command ${JSON.stringify(words[0])}`);
    if (words.length === 1) {
      if (help || rest.some((arg) => arg === "-h" || arg === "--help")) {
        return { kind: "help", text: groupHelp(words[0] as string) };
      }
      throw new UsageError(`Missing subcommand: ${group.map((c) => c.path.join(" ")).join(", ")}`);
    }
    throw new UsageError(
      `Unknown command ${JSON.stringify(words.slice(0, 2).join(" "))}; ${words[0]} has: ${group.map((c) => c.path[1]).join(", ")}`,
    );
  }

  const args = [...words.slice(command.path.length), ...rest];
  let values: Record<string, string | boolean | undefined>;
  try {
    // No option is declared `multiple`, so every value is a string or a boolean.
    const parsed = parseArgs({ args, options: parseOptionsOf(command), strict: true, allowPositionals: !!command.positional });
    values = parsed.values as Record<string, string | boolean | undefined>;
    if (command.positional && !values.help && !help) {
      if (parsed.positionals.length !== 1) {
        throw new UsageError(
          parsed.positionals.length
            ? `Unexpected argument ${JSON.stringify(parsed.positionals[1])}`
            : `Missing ${command.positional.valueName}`,
          command,
        );
      }
      values[command.positional.name] = parsed.positionals[0];
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(describeParseError(error), command);
  }
  if (help || values.help) return { kind: "help", text: commandHelp(command) };
  const missing = Object.entries(command.options)
    .filter(([name, spec]) => spec.required && values[name] === undefined)
    .map(([name]) => `--${name}`);
  if (missing.length) {
    throw new UsageError(`Missing required option${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`, command);
  }
  return { kind: "run", command, json: json || values.json === true, values };
}

function parseOptionsOf(command: Command): NonNullable<ParseArgsConfig["options"]> {
  const options: NonNullable<ParseArgsConfig["options"]> = {
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  };
  for (const [name, spec] of Object.entries(command.options)) {
    options[name] = { type: spec.type };
  }
  return options;
}

function describeParseError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const message = messageOf(error);
  const quoted = /'([^']+)'/.exec(message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && quoted) return `Unknown option ${quoted}`;
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL" && quoted) return `Unexpected argument ${JSON.stringify(quoted)}`;
  if (code?.startsWith("ERR_PARSE_ARGS_")) return message;
  throw error;
}

function groupOf(word: string): Command[] {
  return commands.filter((c) => c.path.length > 1 && c.path[0] === word);
}

function usageLine(command: Command): string {
  const parts = Object.entries(command.options).map(([name, spec]) => {
    const option = spec.type === "string" ? `--${name} ${spec.valueName ?? "VALUE"}` : `--${name}`;
    return spec.required ? option : `[${option}]`;
  });
  return [invocation, ...command.path, ...parts, ...(command.positional ? [command.positional.valueName] : []), "[--json]"].join(
    " ",
  );
}

function table(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join("\n");
}

const databaseHelp = [
  "Database (the same settings as the server):",
  "  DATA_DIR      embedded database directory (default ./.data); only one process can use it,",
  "                so stop the server first",
  "  DATABASE_URL  postgres://... selects PostgreSQL instead (usable while the server runs)",
].join("\n");

const exitCodes = "Exit codes: 0 success, 1 the operation failed, 2 wrong usage.";

function programHelp(): string {
  return [
    "Operator CLI of the compliance workspace gateway.",
    "",
    `Usage: ${invocation} <command> [options] [--json]`,
    "",
    "Commands:",
    table(commands.map((c) => [c.path.join(" "), c.summary])),
    "",
    "Options for every command:",
    table([
      ["--json", "print exactly one JSON object on stdout"],
      ["-h, --help", "show help for the command"],
    ]),
    "",
    databaseHelp,
    "",
    exitCodes,
  ].join("\n");
}

function groupHelp(group: string): string {
  return [
    `Usage: ${invocation} ${group} <subcommand> [options] [--json]`,
    "",
    "Subcommands:",
    table(groupOf(group).map((c) => [c.path.join(" "), c.summary])),
    "",
    `Run "${invocation} ${group} <subcommand> --help" for its options.`,
  ].join("\n");
}

function commandHelp(command: Command): string {
  const rows: [string, string][] = Object.entries(command.options).map(([name, spec]) => [
    `--${name}${spec.type === "string" ? ` ${spec.valueName ?? "VALUE"}` : ""}`,
    `${spec.description}${spec.required ? " (required)" : ""}`,
  ]);
  if (command.positional) rows.push([command.positional.valueName, `${command.positional.description} (required)`]);
  rows.push(["--json", "print exactly one JSON object on stdout"], ["-h, --help", "show this help"]);
  return [
    `Usage: ${usageLine(command)}`,
    "",
    command.summary,
    ...(command.description ? ["", command.description] : []),
    "",
    "Options:",
    table(rows),
    "",
    "Examples:",
    ...command.examples.map((e) => `  ${invocation} ${e}`),
    "",
    databaseHelp,
    "",
    exitCodes,
  ].join("\n");
}

function helpFor(words: string[]): string {
  if (!words.length) return programHelp();
  const command = commands.find((c) => c.path.length === words.length && c.path.every((w, n) => words[n] === w));
  if (command) return commandHelp(command);
  if (words.length === 1 && groupOf(words[0] as string).length) return groupHelp(words[0] as string);
  throw new UsageError(`Unknown command ${JSON.stringify(words.join(" "))}`);
}

function describeDatabase(options: DatabaseOptions): string {
  if (options.kind === "embedded") return `embedded in ${path.resolve(options.dataDir ?? ".")}`;
  try {
    // Never print the password.
    return `PostgreSQL at ${new URL(options.url).host}`;
  } catch {
    return "PostgreSQL";
  }
}

async function describeFailure(error: unknown): Promise<string> {
  const [{ AppError }, { Prisma }] = await Promise.all([
    import("../platform/errors.js"),
    import("../generated/prisma/client.js"),
  ]);
  if (error instanceof AppError) return `error: ${error.message}\n`;
  // A concurrent writer created the same record between the service's check and its insert.
  if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") {
    return "error: a record with the same unique values already exists\n";
  }
  const stack = error instanceof Error && error.stack ? `\n${error.stack}` : "";
  return `error: unexpected failure: ${messageOf(error)}${stack}\n`;
}

function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length && !error.message) {
    return error.errors.map(messageOf).join("; ");
  }
  if (error instanceof Error) return error.message || (error as NodeJS.ErrnoException).code || error.name;
  return String(error);
}
