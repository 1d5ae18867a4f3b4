from olmorl.rewards.service._cli import main

if __name__ == "__main__":
    main()
