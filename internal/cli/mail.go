package cli

import (
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/towerdefence/platformctl/internal/mail"
)

func newMailCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mail",
		Short: "Look into the mail outbox and retry failed messages (support)",
		Long: "Every mail the service sends goes through the outbox: pending, sending, sent, failed\n" +
			"(permanent SMTP refusal) or expired (its link ran out before delivery). Every action is audited.",
	}
	cmd.AddCommand(newMailOutboxCmd(e), newMailShowCmd(e), newMailRetryCmd(e))
	addActorFlag(cmd, e)
	return cmd
}

func newMailOutboxCmd(e *env) *cobra.Command {
	var (
		output *string
		status string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "List outbox messages, newest first",
		Args:  cobra.NoArgs,
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, _ []string) error {
			msgs, err := p.Mail(cmd.Context(), mail.Filter{Status: mail.Status(status), Limit: limit})
			if err != nil {
				return err
			}
			if ok, err := writeData(e.stdout, *output, msgs); ok {
				return err
			}
			v := e.newView(*output)
			rows := make([][]string, 0, len(msgs))
			for _, m := range msgs {
				next := "-"
				if m.Status == mail.StatusPending || m.Status == mail.StatusSending {
					next = v.when(m.NextAttemptAt)
				}
				rows = append(rows, []string{m.ID.String(), string(m.Status), string(m.Template), m.To,
					strconv.Itoa(m.Attempts), next, v.when(m.CreatedAt), oneLine(m.LastError)})
			}
			return v.print(e, []string{"ID", "STATUS", "TEMPLATE", "TO", "ATTEMPTS", "NEXT ATTEMPT", "CREATED", "LAST ERROR"}, rows)
		}),
	}
	cmd.Flags().StringVar(&status, "status", "", "only messages in this status: pending, sending, sent, failed or expired")
	statuses := make([]string, len(mail.Statuses))
	for i, st := range mail.Statuses {
		statuses[i] = string(st)
	}
	completeValues(cmd, "status", statuses...)
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many messages (up to 1000)")
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

func newMailShowCmd(e *env) *cobra.Command {
	var output *string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one message and every delivery attempt",
		Args:  cobra.ExactArgs(1),
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return withExit(ExitUsage, fmt.Errorf("%q is not a message id", args[0]))
			}
			d, err := p.MailShow(cmd.Context(), id)
			if err != nil {
				return err
			}
			m, atts := d.Message, d.Attempts
			if ok, err := writeData(e.stdout, *output, d); ok {
				return err
			}
			v := e.newView(*output)
			fmt.Fprintln(e.stdout, fitLine(v, fmt.Sprintf("%s  %s  %s to %s  (%q)", m.ID, m.Status, m.Template, m.To, m.Subject)))
			rows := make([][]string, 0, len(atts))
			for _, at := range atts {
				code := "-"
				if at.SMTPCode != 0 {
					code = strconv.Itoa(at.SMTPCode)
				}
				rows = append(rows, []string{strconv.Itoa(at.Attempt), string(at.Outcome), v.when(at.StartedAt), v.whenPtr(at.FinishedAt), at.Worker, code, oneLine(at.Error)})
			}
			return v.print(e, []string{"ATTEMPT", "OUTCOME", "STARTED", "FINISHED", "WORKER", "SMTP", "ERROR"}, rows)
		}),
	}
	output = addOutputFlag(cmd)
	bindSupportSettings(cmd)
	return cmd
}

func newMailRetryCmd(e *env) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Send a failed message again (its link must still be valid)",
		Long: "Make a failed message due again; a running serve delivers it within its poll interval.\n" +
			"Sent and expired messages cannot be retried: issue a new token instead.",
		Args: cobra.ExactArgs(1),
		RunE: planeRunE(e, func(cmd *cobra.Command, p plane, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return withExit(ExitUsage, fmt.Errorf("%q is not a message id", args[0]))
			}
			m, err := p.MailRetry(cmd.Context(), reason, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "message %s is %s again; serve delivers it shortly\n", m.ID, m.Status)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	bindSupportSettings(cmd)
	return cmd
}
