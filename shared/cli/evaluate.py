"""`quire eval`: retrieval measured per lane on a BEIR dataset, or grounded answers on labelled questions."""

import argparse
import sys
from pathlib import Path
from typing import Any

from shared.cli.common import print_result, running_stack
from shared.domain.auth import Role, with_role


def cmd_eval(args: argparse.Namespace) -> int:
    """A BEIR dataset through the real index into a scratch tenant, measured per lane (starts the stack
    if it is not running, and stops it again)."""
    from pathlib import Path

    from shared.local.evaluation import Evaluation, load_beir, print_report, print_sweep
    from shared.local.language_evaluation import language_directories

    # Retrieval scores the test split unless told; answers are measured (and calibrated) on train.
    args.split = args.split or ("train" if args.answers else "test")
    if args.answers:
        return _eval_answers(args)
    if not args.dataset:
        print("quire eval: --dataset is required (without --answers)", file=sys.stderr)
        return 2
    directory = Path(args.dataset)
    if directory.is_dir() and (languages := language_directories(directory)):
        return _eval_languages(args, directory, languages)
    try:
        dataset = load_beir(directory, args.split)
    except (OSError, ValueError) as error:
        print(f"quire eval: {error}", file=sys.stderr)
        return 2
    if args.queries:
        dataset.queries = dict(list(dataset.queries.items())[: args.queries])
    with running_stack("eval") as stack:
        evaluation = Evaluation(
            stack.container, tenant=args.reuse, progress=lambda line: print(line, file=sys.stderr, flush=True)
        )
        try:
            if args.sweep:
                print_sweep(evaluation.sweep(dataset))
                return 0
            report = evaluation.run(dataset, name=directory.name, split=args.split)
        finally:
            if args.keep or args.reuse:
                print(f"the scratch tenant is kept: quire eval ... --reuse {evaluation.tenant}", file=sys.stderr)
            else:
                evaluation.remove()
    print_result(args, report.as_dict(), lambda _: print_report(report))
    return 0 if report.citations_failed == 0 else 1


def _eval_languages(args: argparse.Namespace, directory: "Path", languages: dict[str, "Path"]) -> int:
    """A multilingual set (a BEIR dataset per language under `directory`), each language on its own, reported per
    language: the tune queries are qrels/train.tsv's, the held-out ones qrels/test.tsv's."""
    from shared.local.language_evaluation import (
        evaluate_languages,
        print_languages,
        print_weight_sweep,
        sweep_languages,
    )

    if args.language:
        wanted = set(args.language.split(","))
        languages = {language: path for language, path in languages.items() if language in wanted}
    if args.sweep:
        with running_stack("eval") as stack:
            table = sweep_languages(
                stack.container, languages, progress=lambda line: print(line, file=sys.stderr, flush=True)
            )
        print_result(args, table, lambda _: print_weight_sweep(directory.name, table))
        return 0
    with running_stack("eval") as stack:
        reports = evaluate_languages(
            stack.container,
            directory,
            languages=languages,
            keep=args.keep,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    result = {language: report.as_dict() for language, report in reports.items()}
    print_result(args, result, lambda _: print_languages(directory.name, reports))
    return 0 if all(report.citations_failed == 0 for report in reports.values()) else 1


def _eval_answers(args: argparse.Namespace) -> int:
    """`quire eval --answers`: the labelled questions of docs/answers.md ("Evaluation") through the answer service
    on the local stack (started if it is not running, and stopped again): the demo set, and SciFact's with
    --dataset."""
    import tempfile
    import uuid
    from pathlib import Path

    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.local.answer_evaluation import (
        DEMO_COLLECTION,
        RESTRICTED,
        ScifactRun,
        evaluate,
        print_report,
        print_sweep,
    )
    from shared.local.api_client import ApiClient
    from shared.local.evaluation import load_beir

    scifact = None
    if args.dataset:
        try:
            dataset = load_beir(Path(args.dataset), args.split)
        except (OSError, ValueError) as error:
            print(f"quire eval: {error}", file=sys.stderr)
            return 2
        scifact = ScifactRun(dataset, args.split, reuse=args.reuse, keep=args.keep, answerable=args.queries)
    if args.calibrate and args.split != "train":
        print("quire eval: --calibrate runs on the train split only (tune nothing on held-out splits)", file=sys.stderr)
        return 2
    with running_stack("eval") as stack:
        tenant = f"answers-{uuid.uuid4().hex[:10]}"
        principal = with_role(tenant, "quire-eval", {DEMO_COLLECTION, RESTRICTED}, Role.WRITE)
        token = LocalTokenIssuer(read_or_create_secret(stack.paths.jwt_secret)).issue(principal)
        client = ApiClient(stack.state["api"], token)

        def upload(files: Any) -> None:
            tickets = [client.upload(path, collection)["fileId"] for path, collection in files]
            for file_id in tickets:
                client.wait_until_processed(file_id)

        with tempfile.TemporaryDirectory() as directory:
            result = evaluate(
                stack.container,
                demo_tenant=tenant,
                upload=upload,
                directory=Path(directory),
                scifact=scifact,
                calibrate=args.calibrate,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )

    def as_text(_: object) -> None:
        print_report(result["report"])
        if result["sweep"]:
            print()
            print_sweep(result["sweep"])
        if result["margin_sweep"]:
            print()
            print_sweep(result["margin_sweep"])

    print_result(args, result, as_text)
    failed = any(
        report["citation_resolvability"] not in (None, 1.0)
        or report["verbatim_share"] not in (None, 1.0)
        or report["cross_tenant_citations"]
        for report in result["report"].values()
    )
    return 1 if failed else 0


def add_eval_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    evaluate = commands.add_parser(
        "eval", help="nDCG@10, recall@10/100 and MRR@10 per lane on a BEIR dataset; --answers: grounded answers"
    )
    evaluate.add_argument(
        "--dataset",
        help="a BEIR directory: corpus.jsonl, queries.jsonl, qrels/ (required without --answers); or a multilingual"
        " set, one such directory per language (DIR/de, DIR/zh, ...), reported per language",
    )
    evaluate.add_argument(
        "--language", help="a multilingual set's languages to measure, comma-separated (default: all)"
    )
    evaluate.add_argument(
        "--split", help="the qrels split to score (default: test; train with --answers; tune only on train)"
    )
    evaluate.add_argument(
        "--queries", type=int, help="only the first N queries of the split (--answers: N sampled SciFact claims)"
    )
    evaluate.add_argument("--json", action="store_true")
    evaluate.add_argument("--keep", action="store_true", help="keep the scratch tenant (to --reuse it)")
    evaluate.add_argument("--reuse", help="a kept scratch tenant: skip ingesting the corpus again")
    evaluate.add_argument("--sweep", action="store_true", help="nDCG@10 over a grid of RRF k and BM25 k1, b")
    evaluate.add_argument(
        "--answers",
        action="store_true",
        help="grounded answers on labelled questions: the demo set, and SciFact's with --dataset (docs/answers.md)",
    )
    evaluate.add_argument(
        "--calibrate",
        action="store_true",
        help="with --answers: the sentence floor swept around the embedding model's own (MiniLM: 0.2-0.45; train only)",
    )
    evaluate.set_defaults(run=cmd_eval)
