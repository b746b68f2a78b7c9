import { useEffect, useState } from "react";

export interface User {
  id: number;
  name: string;
  email?: string | null;
  readonly roles: ReadonlyArray<"admin" | "user">;
}

type Result<T, E = Error> = { ok: true; value: T } | { ok: false; error: E };

export function useUsers(url: string): Result<User[]> | undefined {
  const [state, setState] = useState<Result<User[]>>();
  useEffect(() => {
    let cancelled = false;
    fetch(url)
      .then((r) => r.json() as Promise<User[]>)
      .then((value) => !cancelled && setState({ ok: true, value }))
      .catch((error: Error) => !cancelled && setState({ ok: false, error }));
    return () => {
      cancelled = true;
    };
  }, [url]);
  return state;
}

export const UserList = ({ users }: { users: User[] }) => (
  <ul className="users">
    {users.map((u) => (
      <li key={u.id} data-admin={u.roles.includes("admin")}>
        {u.name} &lt;{u.email ?? "n/a"}&gt;
      </li>
    ))}
  </ul>
);

enum Direction { Up = 1, Down, Left, Right }
declare module "*.svg" { const src: string; export default src; }
