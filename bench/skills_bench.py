"""Skills at start (bench/run.sh skills): what 200 skills cost the system
prompt and the start (decision 85).

Rows:
  - tokens: the system prompt with 200 skills (each with a 550-character
    description) against the same prompt without them, in o200k tokens
    (bench/peers): the skills section may add at most 4,000;
  - start: `ikigai --provider stub -p hi` (offline, the whole process) with
    those 200 skills against none: at most 20 ms more.
"""

import os
import subprocess
import tempfile

from context_bench import Fake

COUNT = 200
DESCRIPTION = "Fill in, check and sign the team's release forms; use when a release is cut. " * 7


def home_with_skills(root, count):
    """A home under `root` holding `count` skills in the person's folder."""
    os.makedirs(os.path.join(root, "config", "ikigai"), exist_ok=True)
    os.makedirs(os.path.join(root, "tools"), exist_ok=True)
    for i in range(count):
        name = f"skill-{i:03d}"
        folder = os.path.join(root, "config", "ikigai", "skills", name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "SKILL.md"), "w") as f:
            f.write(f"---\nname: {name}\ndescription: {DESCRIPTION.strip()}\n---\n"
                    + "Step.\n" * 200)
    return root


def env_for(home, libexec):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_DATA_HOME=os.path.join(home, "data"), IKIGAI_LIBEXEC_DIR=libexec,
               IKIGAI_TOOLS_DIR=os.path.join(home, "tools"), OLLAMA_HOST="127.0.0.1:1",
               IKIGAI_RETRY_BASE_MS="1", IKIGAI_APPROVAL="auto")
    for var in ("IKIGAI_PROVIDER", "IKIGAI_MODEL", "IKIGAI_CONFIG", "IKIGAI_CONTEXT_DIR"):
        env.pop(var, None)
    return env


def system_prompt(host, libexec, home):
    """The first request's system prompt, from a fake Anthropic server."""
    fake = Fake("true")
    try:
        env = env_for(home, libexec)
        env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url(),
                   IKIGAI_PROVIDER="anthropic")
        p = subprocess.run([host, "-p", "hi"], env=env, cwd=home, capture_output=True,
                           timeout=120)
    finally:
        fake.stop()
    return fake.first_system or "", p


def tokens(peers_bin, text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        out = subprocess.run([peers_bin, "tokens", path], capture_output=True, check=True,
                             text=True)
        return int(out.stdout.split()[0])
    finally:
        os.unlink(path)


def run_all(t, host, libexec, peers_bin, bench_dir, row, fmt_time):
    base = os.path.join(bench_dir, "skills")
    subprocess.run(["rm", "-rf", base], check=True)
    with_skills = home_with_skills(os.path.join(base, "with"), COUNT)
    without = home_with_skills(os.path.join(base, "without"), 0)
    full, p = system_prompt(host, libexec, with_skills)
    bare, q = system_prompt(host, libexec, without)
    added = tokens(peers_bin, full) - tokens(peers_bin, bare)
    listed = full.count("\n- skill-")
    ok = p.returncode == 0 and q.returncode == 0 and "# Skills" in full and listed > 0
    rows = [row("skills", f"{COUNT} skills: o200k tokens the prompt grows by ({listed} listed, "
                f"the rest named as left out)", ours=str(added), peer="budget",
                peer_time="4,000", ratio=f"{added / 4000:.2f}", target="≤ 1.0",
                ok=ok and added <= 4000, tokens=added, listed=listed)]
    cmd = [host, "--provider", "stub", "-p", "hi"]
    m = t.medians({"with": {"cmd": cmd, "env": env_for(with_skills, libexec)},
                   "without": {"cmd": cmd, "env": env_for(without, libexec)}},
                  runs=60, warmup=3, rounds=6)
    extra = m["with"] - m["without"]
    rows.append(row("skills", f"start to answer (`-p`, stub provider), {COUNT} skills against none",
                    ours=f"+{fmt_time(max(extra, 0))}", peer="none",
                    peer_time=fmt_time(m["without"]), ratio=f"{extra * 1000:.1f} ms",
                    target="≤ +20 ms", ok=extra <= 0.020, with_s=m["with"],
                    without_s=m["without"]))
    return rows
